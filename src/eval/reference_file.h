// A frozen baseline (`kvaudit reference`; docs/endpoints.md "A frozen reference"): for each window
// of a text, its token ids and, for every scored position, the baseline's top-k log-probabilities
// and the true token's own (run/topk_row.h), as a server's prompt logprobs give them. `eval
// --reference FILE` reads the baseline from it instead of asking a baseline server again: the KLD
// against it is the same number as against the live baseline answering the same top k.
//
// Layout (little-endian):
//   "KVAUDIT-REFERENCE\n"                 18 bytes
//   u32 header_len, header_len bytes      JSON: ReferenceFile::header
//   u32 n_windows, then per window:
//     u32 window, u32 n_ids, i32 ids[n_ids], u32 first_pos,
//     then for each position p in [first_pos, n_ids - 1): the row predicting ids[p + 1]:
//       f64 logprob, u32 n_top, n_top x (i32 id, f64 logprob)
//   "END\n"
// Logprobs stay doubles: a reference gives the live baseline's numbers bit for bit.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "run/topk_row.h"

namespace kvaudit {

// How results name a frozen baseline: this prefix, then the baseline the reference was made with
// (its spec, or its server's name). gate takes "reference SPEC" for SPEC.
inline constexpr std::string_view kReferenceBaselinePrefix = "reference ";

struct ReferenceWindow {
  int window = 0;             // the data's window index
  std::vector<int32_t> ids;   // [n] the window's tokens
  int first_pos = 0;          // the first scored position (score_from, at most n - 1)
  std::vector<TopKRow> rows;  // [n - 1 - first_pos]: rows[i] predicts ids[first_pos + i + 1]
};

struct ReferenceFile {
  // kind "kvaudit-reference", version 1, model, model_hash (weights) and config_tokenizer_hash,
  // data, tokens_hash, ctx, per_doc, score_from, first_window, top_k, baseline (a spec, or an
  // endpoint's description), positions.
  nlohmann::json header;
  std::vector<ReferenceWindow> windows;
};

// Written atomically; BadInput when the file cannot be written.
Status WriteReference(const std::string& path, const ReferenceFile& ref);
// BadInput naming the file for anything that is not a whole reference of this version.
Expected<ReferenceFile> ReadReference(const std::string& path);

}  // namespace kvaudit

// The table of KV formats (ggml's type-traits idea): one row per format with its codec, layout,
// exact storage cost and who deploys it. `kvaudit formats` prints it; stores look codecs up here.
#pragma once

#include <span>
#include <string_view>

#include "kv/policy/cache_policy.h"
#include "kv/formats/format_id.h"
#include "kv/formats/row_codec.h"

namespace kvaudit {

struct FormatRow {
  KvFormat id;
  std::string_view layout;       // what the bytes are
  std::string_view deployed_by;  // the engines/flags where users meet it
};

std::span<const FormatRow> FormatTable();
const FormatRow& FormatInfo(KvFormat f);

// The row codec a (format, policy) pair stores with (fp8 `dynamic` picks the dynamic codec);
// nullptr for KIVI, which is not a per-row format.
const RowCodec* CodecFor(KvFormat f, const HeadPolicy& p);

// Storage bits per element including scales and metadata, for rows of head_dim elements
// (full-precision protections excluded; KIVI: packed groups only, residual excluded).
double BitsPerElement(KvFormat f, const HeadPolicy& p, int head_dim);

}  // namespace kvaudit

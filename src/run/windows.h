// Cutting a token stream into evaluation windows, the convention of llama.cpp's perplexity tool
// (tools/perplexity/perplexity.cpp): the text is tokenized once with BOS first, cut into
// consecutive windows of n_ctx tokens, and the first token of every window after the first is
// replaced by BOS, so each window starts like a fresh sequence. Only full windows are used, except
// that a stream shorter than one window becomes a single window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit {

class Tokenizer;

// bos_id < 0: no replacement (models without BOS).
std::vector<std::vector<int32_t>> MakeWindows(const std::vector<int32_t>& tokens, int n_ctx, int32_t bos_id);

// The windows of a text input (run/text_data: file, folder or JSONL), BOS first when the tokenizer
// adds one. Joined (score, eval): the documents as one stream cut by MakeWindows. per_doc (eval
// --per-doc): one window per document, truncated to n_ctx; documents under 2 tokens are skipped.
Expected<std::vector<std::vector<int32_t>>> LoadTextWindows(const Tokenizer& tok, const std::string& path, int n_ctx,
                                                            bool per_doc);

// The windows a job evaluates: [first, first + count) of the data's windows (count 0: all from
// first on), the one meaning of --first-window and --windows everywhere. Disjoint ranges are
// disjoint text, so a selection can be checked on windows another one did not see. `first` at or
// past the last window is BadInput.
Expected<std::vector<std::vector<int32_t>>> SelectWindows(std::vector<std::vector<int32_t>> windows, int first,
                                                          int count);

}  // namespace kvaudit

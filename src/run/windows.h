// Cutting a token stream into evaluation windows, the convention of llama.cpp's perplexity tool
// (tools/perplexity/perplexity.cpp): the text is tokenized once with BOS first, cut into
// consecutive windows of n_ctx tokens, and the first token of every window after the first is
// replaced by BOS, so each window starts like a fresh sequence. Only full windows are used, except
// that a stream shorter than one window becomes a single window.
#pragma once

#include <cstdint>
#include <vector>

namespace kvaudit {

// bos_id < 0: no replacement (models without BOS).
std::vector<std::vector<int32_t>> MakeWindows(const std::vector<int32_t>& tokens, int n_ctx, int32_t bos_id);

}  // namespace kvaudit

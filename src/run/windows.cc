#include "run/windows.h"

#include "base/status.h"

namespace kvaudit {

std::vector<std::vector<int32_t>> MakeWindows(const std::vector<int32_t>& tokens, int n_ctx, int32_t bos_id) {
  KV_CHECK(n_ctx >= 2);
  std::vector<std::vector<int32_t>> windows;
  const size_t n = tokens.size();
  if (n < static_cast<size_t>(n_ctx)) {
    if (!tokens.empty()) windows.push_back(tokens);
    return windows;
  }
  for (size_t start = 0; start + static_cast<size_t>(n_ctx) <= n; start += static_cast<size_t>(n_ctx)) {
    windows.emplace_back(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                         tokens.begin() + static_cast<std::ptrdiff_t>(start + static_cast<size_t>(n_ctx)));
    if (start > 0 && bos_id >= 0) windows.back()[0] = bos_id;
  }
  return windows;
}

}  // namespace kvaudit

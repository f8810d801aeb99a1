#include "run/windows.h"

#include "run/text_data.h"
#include "tokenizer/tokenizer.h"

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

Expected<std::vector<std::vector<int32_t>>> LoadTextWindows(const Tokenizer& tok, const std::string& path, int n_ctx,
                                                            bool per_doc) {
  KV_ASSIGN_OR_RETURN(std::vector<std::string> docs, LoadDocuments(path));
  const bool bos = tok.add_bos_default();
  if (!per_doc) return MakeWindows(tok.Encode(JoinDocuments(docs), bos), n_ctx, bos ? tok.bos_id() : -1);
  std::vector<std::vector<int32_t>> windows;
  for (const std::string& d : docs) {
    std::vector<int32_t> ids = tok.Encode(d, bos);
    if (ids.size() > static_cast<size_t>(n_ctx)) ids.resize(static_cast<size_t>(n_ctx));
    if (ids.size() >= 2) windows.push_back(std::move(ids));
  }
  return windows;
}

Expected<std::vector<std::vector<int32_t>>> SelectWindows(std::vector<std::vector<int32_t>> windows, int first,
                                                          int count) {
  KV_CHECK(first >= 0 && count >= 0);
  if (static_cast<size_t>(first) >= windows.size()) {
    return BadInput("--first-window " + std::to_string(first) + " is past the data's " +
                    std::to_string(windows.size()) + " windows; hint: use --first-window 0.." +
                    std::to_string(windows.size() - 1) + ", a shorter --ctx or more text");
  }
  windows.erase(windows.begin(), windows.begin() + first);
  if (count > 0 && static_cast<size_t>(count) < windows.size()) windows.resize(static_cast<size_t>(count));
  return windows;
}

}  // namespace kvaudit

#include "serve/stream_text.h"

#include <algorithm>

namespace kvaudit::serve {

size_t CompleteUtf8Prefix(const std::string& text) {
  // The last lead byte among the final 4 bytes: if its sequence needs more bytes than follow it,
  // the text is cut there (RFC 3629 lengths from the lead byte).
  const size_t n = text.size();
  for (size_t back = 1; back <= std::min<size_t>(4, n); ++back) {
    const unsigned char c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for its lead
    const size_t need = c >= 0xF0 && c <= 0xF7 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return need > back && c >= 0xC0 ? n - back : n;
  }
  return n;  // only continuation bytes (invalid UTF-8): not ours to hold
}

std::string StreamText::Delta(const std::string& text) {
  size_t safe = text.size();
  for (const std::string& stop : stops_) {
    // A whole stop string (searched from where one could start that was not sent yet) ...
    const size_t from = sent_ >= stop.size() ? sent_ - stop.size() + 1 : 0;
    const size_t at = text.find(stop, from);
    if (at != std::string::npos) safe = std::min(safe, at);
    // ... or a tail of the text that is a proper prefix of one.
    for (size_t len = std::min(stop.size() - 1, text.size()); len > 0; --len) {
      if (text.compare(text.size() - len, len, stop, 0, len) == 0) {
        safe = std::min(safe, text.size() - len);
        break;
      }
    }
  }
  safe = std::min(safe, CompleteUtf8Prefix(text.substr(0, safe)));
  if (safe <= sent_) return {};
  std::string delta = text.substr(sent_, safe - sent_);
  sent_ = safe;
  return delta;
}

std::string StreamText::Finish(const std::string& final_text) {
  if (final_text.size() <= sent_) return {};
  std::string rest = final_text.substr(sent_);
  sent_ = final_text.size();
  return rest;
}

}  // namespace kvaudit::serve

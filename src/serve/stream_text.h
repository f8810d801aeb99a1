// What a streamed completion may send of its text so far (docs/serve.md "Streaming"). Called with
// the whole decoded text after every token, it returns the new bytes that are safe to send:
//   - never bytes at or after a stop string, nor a tail that could be the start of one (vLLM's
//     detokenizer holds back the same: vllm/v1/engine/detokenizer.py, stop_buffer_length), so a
//     stop string never leaks, not even in part;
//   - never a UTF-8 sequence cut short (a token may end inside a character): its first bytes wait
//     for the token that completes it, so every chunk is whole UTF-8 when the text is.
// Finish(final_text) returns the rest: the concatenation of every delta is final_text, the text
// the same request answers without streaming.
#pragma once

#include <string>
#include <vector>

namespace kvaudit::serve {

class StreamText {
 public:
  explicit StreamText(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // text: everything decoded so far (each call's text extends the last one's).
  std::string Delta(const std::string& text);
  // final_text: the completion's text (cut before a stop string); what has not been sent of it.
  std::string Finish(const std::string& final_text);

  size_t sent() const { return sent_; }

 private:
  std::vector<std::string> stops_;
  size_t sent_ = 0;  // bytes of the text already returned
};

// Bytes of text that end where no UTF-8 sequence is cut short: text.size() minus the bytes of an
// unfinished multi-byte sequence at its end (0 to 3).
size_t CompleteUtf8Prefix(const std::string& text);

}  // namespace kvaudit::serve

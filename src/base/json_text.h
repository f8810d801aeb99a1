// JSON as text that never throws: nlohmann::json::dump() throws type_error 316 on a string that is
// not valid UTF-8, and kvaudit's strings include model output (a byte-level tokenizer can stop in
// the middle of a character), file names and user text. Every invalid byte becomes U+FFFD, so a
// results file, a journal line or a message is always written; the token ids beside such text are
// the exact record.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kvaudit {

inline std::string JsonText(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kvaudit

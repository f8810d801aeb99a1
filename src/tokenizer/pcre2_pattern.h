// A compiled PCRE2 pattern (UTF + UCP) and a match context whose match and depth limits bound the
// work of a hostile pattern: the one place PCRE2 is set up, for the pre-tokenizer's splits and the
// probes' regex checks. MATCH_INVALID_UTF: a subject may hold invalid UTF-8 (the input of a
// byte-level BPE, a model's output cut mid-character); such bytes match nothing.
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <string>

#include "base/status.h"

namespace kvaudit {

class Pcre2Pattern {
 public:
  // BadInput "does not compile at offset N: <PCRE2's message>" (the caller says which pattern).
  // jit: also JIT-compile (optional: pcre2_match falls back to the interpreter without it).
  static Expected<std::unique_ptr<Pcre2Pattern>> Compile(const std::string& pattern, bool jit);
  ~Pcre2Pattern();
  Pcre2Pattern(const Pcre2Pattern&) = delete;
  Pcre2Pattern& operator=(const Pcre2Pattern&) = delete;

  const pcre2_code* code() const { return code_; }
  pcre2_match_context* context() const { return context_; }

 private:
  Pcre2Pattern() = default;
  pcre2_code* code_ = nullptr;
  pcre2_match_context* context_ = nullptr;
};

}  // namespace kvaudit

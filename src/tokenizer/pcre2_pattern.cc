#include "tokenizer/pcre2_pattern.h"

namespace kvaudit {

Expected<std::unique_ptr<Pcre2Pattern>> Pcre2Pattern::Compile(const std::string& pattern, bool jit) {
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return BadInput("does not compile at offset " + std::to_string(err_offset) + ": " +
                    reinterpret_cast<const char*>(msg));
  }
  if (jit) pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  auto p = std::unique_ptr<Pcre2Pattern>(new Pcre2Pattern());
  p->code_ = code;
  p->context_ = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(p->context_, 1000000);
  pcre2_set_depth_limit(p->context_, 10000);
  return p;
}

Pcre2Pattern::~Pcre2Pattern() {
  pcre2_match_context_free(context_);
  pcre2_code_free(code_);
}

}  // namespace kvaudit

#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/utf8.h"

namespace kvaudit {

class RegexSplitter {
 public:
  static Expected<std::unique_ptr<RegexSplitter>> Compile(const std::string& pattern) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    // MATCH_INVALID_UTF: the input may hold invalid UTF-8 (byte-level BPE must still encode it);
    // invalid bytes then match nothing and end up in gaps, which become pieces of their own.
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_offset, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return BadInput("pre-tokenizer regex does not compile at offset " + std::to_string(err_offset) + ": " +
                      reinterpret_cast<const char*>(msg));
    }
    // JIT is optional: pcre2_match falls back to the interpreter when it is unavailable.
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    auto splitter = std::unique_ptr<RegexSplitter>(new RegexSplitter());
    splitter->code_ = code;
    splitter->context_ = pcre2_match_context_create(nullptr);
    // Bound the work of hostile patterns (fuzzed tokenizer.json); a hit ends the split early.
    pcre2_set_match_limit(splitter->context_, 1000000);
    pcre2_set_depth_limit(splitter->context_, 10000);
    return splitter;
  }

  ~RegexSplitter() {
    pcre2_match_context_free(context_);
    pcre2_code_free(code_);
  }

  void Split(std::string_view text, std::vector<std::string_view>* out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t gap_start = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      int rc = pcre2_match(code_, subject, text.size(), pos, 0, md, context_);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(code_, subject, text.size(), pos, PCRE2_NO_JIT, md, context_);
      }
      if (rc < 0) break;  // no further match (or a limit): the rest is one gap
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const size_t begin = ov[0];
      const size_t end = ov[1];
      if (end <= begin) {  // empty match: skip a character so the loop advances
        pos = begin + 1;
        while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
        continue;
      }
      if (begin > gap_start) out->push_back(text.substr(gap_start, begin - gap_start));
      out->push_back(text.substr(begin, end - begin));
      gap_start = pos = end;
    }
    if (gap_start < text.size()) out->push_back(text.substr(gap_start));
    pcre2_match_data_free(md);
  }

 private:
  RegexSplitter() = default;
  pcre2_code* code_ = nullptr;
  pcre2_match_context* context_ = nullptr;
};

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

Status PreTokenizer::AddRegex(const std::string& pattern) {
  auto splitter = RegexSplitter::Compile(pattern);
  if (!splitter) return splitter.error();
  stages_.push_back(std::move(splitter).value());
  patterns_.push_back(pattern);
  return Status::Ok();
}

std::vector<std::string_view> PreTokenizer::Split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  for (const auto& stage : stages_) {
    std::vector<std::string_view> next;
    next.reserve(pieces.size() * 2 + 8);
    for (std::string_view p : pieces) stage->Split(p, &next);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace kvaudit

#include "tokenizer/pretokenizer.h"

#include "tokenizer/pcre2_pattern.h"
#include "tokenizer/utf8.h"

namespace kvaudit {

// One regex stage: the pieces of a text are its matches and the gaps between them (invalid UTF-8
// matches nothing, so it ends up in gaps, which become pieces of their own).
class RegexSplitter {
 public:
  static Expected<std::unique_ptr<RegexSplitter>> Compile(const std::string& pattern) {
    auto compiled = Pcre2Pattern::Compile(pattern, /*jit=*/true);
    if (!compiled) return BadInput("pre-tokenizer regex " + compiled.error().message);
    auto splitter = std::unique_ptr<RegexSplitter>(new RegexSplitter());
    splitter->pattern_ = std::move(compiled).value();
    return splitter;
  }

  void Split(std::string_view text, std::vector<std::string_view>* out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(pattern_->code(), nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t gap_start = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      int rc = pcre2_match(pattern_->code(), subject, text.size(), pos, 0, md, pattern_->context());
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(pattern_->code(), subject, text.size(), pos, PCRE2_NO_JIT, md, pattern_->context());
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
  std::unique_ptr<Pcre2Pattern> pattern_;
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

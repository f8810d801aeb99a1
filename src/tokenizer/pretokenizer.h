// Regex pre-tokenization (HF `Split` with behavior "Isolated", llama.cpp unicode_regex_split):
// each regex splits every current piece into its matches and the gaps between them, in order.
// PCRE2 with UTF + UCP runs the tokenizer.json patterns unchanged (\p{L}, (?i:...), (?!\S)).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvaudit {

// GPT-2 / HF ByteLevel(use_regex=true) pattern.
inline constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Llama-3 (also the bundled model's tokenizer.json): digits in groups of up to three.
inline constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2: like Llama-3 but single digits.
inline constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

class RegexSplitter;

class PreTokenizer {
 public:
  PreTokenizer();
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // Appends a regex stage; the error names the pattern and PCRE2's reason.
  Status AddRegex(const std::string& pattern);
  // HF ByteLevel(add_prefix_space=true): a piece that does not start with a space gets one.
  void set_add_prefix_space(bool on) { add_prefix_space_ = on; }
  bool add_prefix_space() const { return add_prefix_space_; }
  size_t num_stages() const { return stages_.size(); }
  const std::vector<std::string>& patterns() const { return patterns_; }  // [num_stages] as added

  // Pieces of `text` (views into it), none empty, covering it in order.
  std::vector<std::string_view> Split(std::string_view text) const;

 private:
  std::vector<std::unique_ptr<RegexSplitter>> stages_;
  std::vector<std::string> patterns_;
  bool add_prefix_space_ = false;
};

}  // namespace kvaudit

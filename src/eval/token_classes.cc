#include "eval/token_classes.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace kvaudit {

const char* TokenClassName(TokenClass c) {
  switch (c) {
    case TokenClass::kDigits: return "digits";
    case TokenClass::kPunct: return "punct";
    case TokenClass::kIdentifier: return "identifier";
    case TokenClass::kWhitespace: return "whitespace";
    case TokenClass::kOther: return "other";
  }
  return "other";
}

TokenClass ClassifyTokenText(std::string_view text) {
  auto is_space = [](unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  };
  if (text.empty()) return TokenClass::kOther;
  if (std::all_of(text.begin(), text.end(), [&](char c) { return is_space(static_cast<unsigned char>(c)); })) {
    return TokenClass::kWhitespace;
  }
  size_t i = 0;
  while (is_space(static_cast<unsigned char>(text[i]))) ++i;
  const std::string_view body = text.substr(i);
  bool digits = true, ident = true, punct = true;
  for (char ch : body) {
    const auto c = static_cast<unsigned char>(ch);
    const bool digit = c >= '0' && c <= '9';
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
    const bool sym = c > ' ' && c < 0x7f && !digit && !letter;
    digits = digits && digit;
    ident = ident && (digit || letter);
    punct = punct && sym;
  }
  if (digits) return TokenClass::kDigits;
  if (ident) return TokenClass::kIdentifier;
  if (punct) return TokenClass::kPunct;
  return TokenClass::kOther;
}

std::vector<TokenClass> ClassifyVocabulary(const Tokenizer& tokenizer) {
  std::vector<TokenClass> out(static_cast<size_t>(tokenizer.vocab_size()));  // [vocab]
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    const int32_t one[1] = {id};
    out[static_cast<size_t>(id)] = ClassifyTokenText(tokenizer.Decode(one, /*render_special=*/false));
  }
  return out;
}

std::vector<uint8_t> RareTokens(const std::vector<int32_t>& tokens, int vocab) {
  std::vector<int64_t> count(static_cast<size_t>(vocab), 0);  // [vocab]
  for (int32_t t : tokens) {
    if (t >= 0 && t < vocab) ++count[static_cast<size_t>(t)];
  }
  std::vector<int64_t> present;  // [distinct ids] counts
  for (int64_t c : count) {
    if (c > 0) present.push_back(c);
  }
  std::vector<uint8_t> rare(static_cast<size_t>(vocab), 0);  // [vocab]
  if (present.empty()) return rare;
  std::sort(present.begin(), present.end());
  const int64_t threshold = present[static_cast<size_t>(0.1 * static_cast<double>(present.size() - 1))];
  for (size_t i = 0; i < count.size(); ++i) rare[i] = count[i] > 0 && count[i] <= threshold;
  return rare;
}

}  // namespace kvaudit

// Token classes of the true next token, for "where does cache quantization fail first": symbol-
// dense and rare tokens are where practitioners report it (docs/metrics.md). A token is classed by
// its decoded text, leading spaces ignored (byte-level BPE glues the space to the word: " foo").
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kvaudit {

class Tokenizer;

enum class TokenClass : uint8_t {
  kDigits,      // only ASCII digits
  kPunct,       // only ASCII punctuation/symbols
  kIdentifier,  // letters/digits/underscore (bytes ≥ 0x80 count as letters), not only digits
  kWhitespace,  // only whitespace (spaces, tabs, newlines)
  kOther,       // mixed (e.g. "();"+"a"), empty or special tokens
};
inline constexpr int kNumTokenClasses = 5;
const char* TokenClassName(TokenClass c);  // "digits", "punct", "identifier", "whitespace", "other"

TokenClass ClassifyTokenText(std::string_view text);

// [vocab] class of every id, from the tokenizer's decoding of the id alone.
std::vector<TokenClass> ClassifyVocabulary(const Tokenizer& tokenizer);

// [vocab] 1 for "rare" ids: the least frequent decile of the distinct ids occurring in `tokens`
// (the evaluated true next tokens). Threshold = the count at rank ⌊0.1·(D−1)⌋ of the ascending
// counts; every id with a count ≤ it is rare, so ties never split by id order.
std::vector<uint8_t> RareTokens(const std::vector<int32_t>& tokens, int vocab);

}  // namespace kvaudit

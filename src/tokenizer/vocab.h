// The vocabulary shared by both tokenizer algorithms: id <-> string, per-token attributes
// (llama.cpp's llama_token_attr, set from GGUF token_type or HF added_tokens), BOS/EOS, and the
// splitting of special-token text out of the input before pre-tokenization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvaudit {

enum TokenAttr : uint8_t {
  kAttrNormal = 1 << 0,
  kAttrUnknown = 1 << 1,
  kAttrControl = 1 << 2,      // HF added token with special=true; GGUF token_type 3
  kAttrUserDefined = 1 << 3,  // HF added token with special=false; GGUF token_type 4
  kAttrUnused = 1 << 4,
  kAttrByte = 1 << 5,    // <0xNN> byte-fallback token; GGUF token_type 6
  kAttrLstrip = 1 << 6,  // eat whitespace left of the token when matching it in text
  kAttrRstrip = 1 << 7,  // ... and right of it
};

// GGUF tokenizer.ggml.token_type values (llama.h: LLAMA_TOKEN_TYPE_*).
uint8_t AttrFromGgufTokenType(int64_t type);

// The byte of a "<0xNN>" byte-fallback token (SentencePiece spelling), or -1.
int ParseByteToken(std::string_view s);

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Vocab {
  std::vector<std::string> tokens;  // [n_vocab] raw strings as stored in the file
  std::vector<uint8_t> attrs;       // [n_vocab] TokenAttr bits
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids;
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  bool add_bos = false;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  int32_t Find(std::string_view text) const {
    auto it = ids.find(text);
    return it == ids.end() ? -1 : it->second;
  }
  bool Has(int32_t id) const { return id >= 0 && id < size(); }
  // Control and unknown tokens: matched in text only with parse_special, decoded only with render_special.
  bool IsSpecial(int32_t id) const { return attrs[id] & (kAttrControl | kAttrUnknown); }
  // Rebuilds `ids` from `tokens`; the first of duplicate strings wins.
  void IndexTokens();
  // Tokenizer::Digest's vocabulary part: size, each string (length-prefixed), attrs, bos/eos/unk, add_bos.
  void Digest(const std::function<void(const void*, size_t)>& add) const;
};

// A piece of input: either text still to tokenize, or an already matched special token.
struct Fragment {
  int32_t token = -1;     // >= 0: a special token
  std::string_view text;  // raw text when token < 0
};

// Splits special-token text out of the input as llama.cpp's tokenizer_st_partition does: tokens
// with control/user-defined/unknown attributes, longest first, each split out of every remaining
// text fragment; lstrip/rstrip tokens swallow adjacent whitespace. Without parse_special only
// user-defined tokens are matched (HF tokenizers also always splits non-special added tokens).
class SpecialTokenSplitter {
 public:
  explicit SpecialTokenSplitter(const Vocab& vocab);
  std::vector<Fragment> Split(std::string_view text, bool parse_special) const;

 private:
  const Vocab* vocab_;
  std::vector<int32_t> by_length_;  // special ids, longest text first
};

}  // namespace kvaudit

// UTF-8 helpers and the GPT-2 byte <-> unicode table used by byte-level BPE.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvaudit {

// Length of the UTF-8 sequence that starts with `lead`, from its high nibble only (llama.cpp's
// unicode_len_utf8): stray continuation bytes count as 1, so invalid input always advances.
inline int Utf8SeqLen(uint8_t lead) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

void AppendUtf8(uint32_t cp, std::string* out);

// Decodes one code point at text[*pos] and advances *pos; an invalid or truncated sequence
// yields -1 and advances by one byte.
int32_t NextCodepoint(std::string_view text, size_t* pos);

// GPT-2's bytes_to_unicode() (openai/gpt-2 encoder.py, HF ByteLevel pre-tokenizer): printable
// Latin-1 bytes map to themselves, the other 68 bytes to U+0100.. in byte order, so every byte
// string becomes printable text without spaces.
class ByteLevelTable {
 public:
  static const ByteLevelTable& Get();
  // UTF-8 of the code point standing for byte b.
  const std::string& Encode(uint8_t b) const { return encoded_[b]; }
  // The byte a code point stands for, or -1 when it is not one of the 256.
  int Decode(uint32_t cp) const { return cp < decode_.size() ? decode_[cp] : -1; }
  // Maps each byte of `raw` and appends the result.
  void EncodeString(std::string_view raw, std::string* out) const;

 private:
  ByteLevelTable();
  std::array<std::string, 256> encoded_;
  std::array<int16_t, 324> decode_;
};

}  // namespace kvaudit

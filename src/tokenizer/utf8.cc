#include "tokenizer/utf8.h"

namespace kvaudit {

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int32_t NextCodepoint(std::string_view text, size_t* pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(*pos);
  const int n = Utf8SeqLen(lead);
  if (n == 1) {
    ++*pos;
    return lead < 0x80 ? lead : -1;
  }
  if (*pos + n > text.size()) {
    ++*pos;
    return -1;
  }
  uint32_t cp = lead & (0x7F >> n);
  for (int i = 1; i < n; ++i) {
    const uint8_t c = byte(*pos + i);
    if ((c & 0xC0) != 0x80) {
      ++*pos;
      return -1;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  *pos += n;
  return static_cast<int32_t>(cp);
}

const ByteLevelTable& ByteLevelTable::Get() {
  static const ByteLevelTable table;
  return table;
}

ByteLevelTable::ByteLevelTable() {
  decode_.fill(-1);
  const auto printable = [](int b) {
    return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : static_cast<uint32_t>(next++);
    AppendUtf8(cp, &encoded_[b]);
    decode_[cp] = static_cast<int16_t>(b);
  }
}

void ByteLevelTable::EncodeString(std::string_view raw, std::string* out) const {
  for (char c : raw) out->append(encoded_[static_cast<uint8_t>(c)]);
}

}  // namespace kvaudit

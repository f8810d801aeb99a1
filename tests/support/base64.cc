#include "support/base64.h"

#include <algorithm>
#include <array>

namespace kvaudit::testing {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// 6-bit value of each byte, -1 for bytes outside the alphabet ('=' included: handled apart).
constexpr std::array<int8_t, 256> MakeValues() {
  std::array<int8_t, 256> v{};
  for (auto& x : v) x = -1;
  for (int i = 0; i < 64; ++i) v[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  return v;
}
constexpr std::array<int8_t, 256> kValues = MakeValues();

}  // namespace

std::optional<std::vector<uint8_t>> Base64Decode(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;  // the last four 6-bit groups, oldest in the high bits
  for (size_t i = 0; i < text.size() - pad; ++i) {
    const int8_t v = kValues[static_cast<uint8_t>(text[i])];
    if (v < 0) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if (i % 4 == 3) {
      out.push_back(static_cast<uint8_t>(bits >> 16));
      out.push_back(static_cast<uint8_t>(bits >> 8));
      out.push_back(static_cast<uint8_t>(bits));
    }
  }
  // The last group of a padded text: 2 symbols -> 1 byte, 3 symbols -> 2 bytes.
  if (pad == 2) out.push_back(static_cast<uint8_t>(bits >> 4));
  if (pad == 1) {
    out.push_back(static_cast<uint8_t>(bits >> 10));
    out.push_back(static_cast<uint8_t>(bits >> 2));
  }
  return out;
}

std::string Base64Encode(const std::vector<uint8_t>& bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t bits = static_cast<uint32_t>(bytes[i]) << 16;
    if (n > 1) bits |= static_cast<uint32_t>(bytes[i + 1]) << 8;
    if (n > 2) bits |= bytes[i + 2];
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(bits >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

}  // namespace kvaudit::testing

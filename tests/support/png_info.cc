#include "support/png_info.h"

#include <cstring>

namespace kvaudit::testing {
namespace {

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

std::optional<PngSize> ReadPngSize(const std::vector<uint8_t>& bytes) {
  static constexpr uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  if (bytes.size() < 24 || std::memcmp(bytes.data(), kSignature, 8) != 0) return std::nullopt;
  if (BigEndian32(&bytes[8]) != 13 || std::memcmp(&bytes[12], "IHDR", 4) != 0) return std::nullopt;
  return PngSize{BigEndian32(&bytes[16]), BigEndian32(&bytes[20])};
}

}  // namespace kvaudit::testing

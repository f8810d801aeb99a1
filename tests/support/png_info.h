// The size of a PNG image from its header, to check a screenshot's dimensions without a PNG
// library. A PNG (ISO/IEC 15948) starts with the 8-byte signature 89 50 4E 47 0D 0A 1A 0A, then the
// IHDR chunk: a 4-byte big-endian length (13), the type "IHDR", then width and height as 4-byte
// big-endian integers (bytes 16..23 of the file).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace kvaudit::testing {

struct PngSize {
  uint32_t width = 0, height = 0;
};

// nullopt unless bytes start with the signature and an IHDR chunk of length 13.
std::optional<PngSize> ReadPngSize(const std::vector<uint8_t>& bytes);

}  // namespace kvaudit::testing

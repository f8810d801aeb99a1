// RFC 4648 base64 (the standard alphabet, '=' padding), written here because the tests take no
// third-party code: CDP returns every screenshot as base64 text (Page.captureScreenshot "data"),
// and a test hands PNG bytes back to the browser as a data: URL to read its pixels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvaudit::testing {

// Bytes of a padded base64 text; nullopt on any other character, a length that is not a multiple
// of 4, or padding anywhere but at the end (strict: a damaged screenshot must not pass as a short one).
std::optional<std::vector<uint8_t>> Base64Decode(const std::string& text);
// The padded base64 text of bytes.
std::string Base64Encode(const std::vector<uint8_t>& bytes);

}  // namespace kvaudit::testing

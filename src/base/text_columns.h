// The small text helpers the decide layer's terminal reports share (deploy, recommend, audit):
// left-aligned columns, one number in a printf format, lists joined, a cache's GiB at a context.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvaudit {

// `text` left-aligned in `width` columns; longer text is kept whole and followed by one space, so
// columns never run together.
std::string PadColumn(const std::string& text, size_t width);
// One number in a printf format ("%.3f").
std::string FormatNumber(const char* format, double x);
std::string JoinWith(const std::vector<std::string>& parts, const std::string& sep);
// The whole cache at `ctx` tokens in GiB (2^30 bytes), kvaudit's accounting (docs/formats.md).
double GibAtContext(uint64_t bytes_per_token, int ctx);

}  // namespace kvaudit

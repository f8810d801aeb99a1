// The KV formats a cache policy can name (docs/formats.md has the table with bits per element).
#pragma once

#include <optional>
#include <string_view>

namespace kvaudit {

enum class KvFormat {
  kF32, kF16, kBF16,
  kFp8E4M3, kFp8E5M2,
  kQ8_0, kQ4_0, kQ4_1, kQ5_0, kQ5_1, kIq4Nl,
  kKivi2, kKivi4,
  kInt8, kInt4,
};

std::string_view KvFormatName(KvFormat f);
std::optional<KvFormat> KvFormatFromName(std::string_view name);
// Full-precision formats are never "quantized": modifiers (rotation, sinks, ...) do not apply.
bool IsFullPrecision(KvFormat f);
bool IsLlamaCppBlockFormat(KvFormat f);  // q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl
bool IsFp8(KvFormat f);
bool IsKivi(KvFormat f);
bool IsIntGroup(KvFormat f);
// Elements per block along head_dim for block formats (32), else 0.
int FormatBlockElems(KvFormat f);

}  // namespace kvaudit

#include "kv/formats/format_id.h"

#include <array>
#include <utility>

namespace kvaudit {
namespace {

constexpr std::array<std::pair<KvFormat, std::string_view>, 15> kNames = {{
    {KvFormat::kF32, "f32"},         {KvFormat::kF16, "f16"},         {KvFormat::kBF16, "bf16"},
    {KvFormat::kFp8E4M3, "fp8_e4m3"}, {KvFormat::kFp8E5M2, "fp8_e5m2"}, {KvFormat::kQ8_0, "q8_0"},
    {KvFormat::kQ4_0, "q4_0"},       {KvFormat::kQ4_1, "q4_1"},       {KvFormat::kQ5_0, "q5_0"},
    {KvFormat::kQ5_1, "q5_1"},       {KvFormat::kIq4Nl, "iq4_nl"},    {KvFormat::kKivi2, "kivi2"},
    {KvFormat::kKivi4, "kivi4"},     {KvFormat::kInt8, "int8"},       {KvFormat::kInt4, "int4"},
}};

}  // namespace

std::string_view KvFormatName(KvFormat f) {
  for (const auto& [id, name] : kNames) {
    if (id == f) return name;
  }
  return "?";
}

std::optional<KvFormat> KvFormatFromName(std::string_view name) {
  for (const auto& [id, n] : kNames) {
    if (n == name) return id;
  }
  return std::nullopt;
}

bool IsFullPrecision(KvFormat f) { return f == KvFormat::kF32 || f == KvFormat::kF16 || f == KvFormat::kBF16; }

bool IsLlamaCppBlockFormat(KvFormat f) {
  return f == KvFormat::kQ8_0 || f == KvFormat::kQ4_0 || f == KvFormat::kQ4_1 || f == KvFormat::kQ5_0 ||
         f == KvFormat::kQ5_1 || f == KvFormat::kIq4Nl;
}

bool IsFp8(KvFormat f) { return f == KvFormat::kFp8E4M3 || f == KvFormat::kFp8E5M2; }
bool IsKivi(KvFormat f) { return f == KvFormat::kKivi2 || f == KvFormat::kKivi4; }
bool IsIntGroup(KvFormat f) { return f == KvFormat::kInt8 || f == KvFormat::kInt4; }
int FormatBlockElems(KvFormat f) { return IsLlamaCppBlockFormat(f) ? 32 : 0; }

}  // namespace kvaudit

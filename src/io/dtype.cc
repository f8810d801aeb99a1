#include "io/dtype.h"

#include <limits>
#include <string>

namespace kvaudit {
namespace {

// One row per DType, in enum order. Block sizes and byte counts follow ggml-common.h:
// block_q8_0 = {f16 d; i8 qs[32]}, block_q4_0 = {d; qs[16]}, block_q4_1 = {d, m; qs[16]},
// block_q5_0 = {d; qh[4]; qs[16]}, block_q5_1 = {d, m; qh[4]; qs[16]},
// block_q4_K = {d, dmin; scales[12]; qs[128]}, block_q5_K = {d, dmin; scales[12]; qh[32]; qs[128]},
// block_q6_K = {ql[128]; qh[64]; i8 scales[16]; d}, block_q2_K = {scales[16]; qs[64]; d, dmin},
// block_q3_K = {hmask[32]; qs[64]; scales[12]; d}, block_iq4_nl = {d; qs[16]},
// block_iq4_xs = {d; u16 scales_h; scales_l[4]; qs[128]}.
constexpr DTypeInfo kTable[kNumDTypes] = {
    {"F32", 1, 4, true},      {"F16", 1, 2, true},        {"BF16", 1, 2, true},    {"F64", 1, 8, true},
    {"I8", 1, 1, false},      {"I16", 1, 2, false},       {"I32", 1, 4, false},    {"I64", 1, 8, false},
    {"U8", 1, 1, false},      {"BOOL", 1, 1, false},      {"Q8_0", 32, 34, true},  {"Q4_0", 32, 18, true},
    {"Q4_1", 32, 20, true},   {"Q5_0", 32, 22, true},     {"Q5_1", 32, 24, true},  {"Q4_K", 256, 144, true},
    {"Q5_K", 256, 176, true}, {"Q6_K", 256, 210, true},   {"Q2_K", 256, 84, true}, {"Q3_K", 256, 110, true},
    {"IQ4_NL", 32, 18, true}, {"IQ4_XS", 256, 136, true},
};
static_assert(static_cast<int>(DType::kIQ4_XS) + 1 == kNumDTypes, "kTable must cover every DType");
static_assert(kTable[static_cast<int>(DType::kQ8_0)].block_bytes == 2 + 32);
static_assert(kTable[static_cast<int>(DType::kQ4_K)].block_bytes == 2 + 2 + 12 + 128);
static_assert(kTable[static_cast<int>(DType::kQ5_K)].block_bytes == 2 + 2 + 12 + 32 + 128);
static_assert(kTable[static_cast<int>(DType::kQ6_K)].block_bytes == 128 + 64 + 16 + 2);
static_assert(kTable[static_cast<int>(DType::kQ2_K)].block_bytes == 16 + 64 + 2 + 2);
static_assert(kTable[static_cast<int>(DType::kQ3_K)].block_bytes == 32 + 64 + 12 + 2);
static_assert(kTable[static_cast<int>(DType::kIQ4_NL)].block_bytes == 2 + 16);
static_assert(kTable[static_cast<int>(DType::kIQ4_XS)].block_bytes == 2 + 2 + 4 + 128);

}  // namespace

const DTypeInfo& GetDTypeInfo(DType t) {
  const int i = static_cast<int>(t);
  KV_CHECK(i >= 0 && i < kNumDTypes);
  return kTable[i];
}

std::optional<DType> DTypeFromName(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kTable[i].name == name) return static_cast<DType>(i);
  }
  return std::nullopt;
}

Expected<uint64_t> ByteSize(DType t, int64_t n_elements) {
  const DTypeInfo& info = GetDTypeInfo(t);
  if (n_elements < 0) return BadInput("negative element count " + std::to_string(n_elements));
  if (n_elements % info.block_elems != 0) {
    return BadInput(std::to_string(n_elements) + " elements is not a multiple of the " + std::string(info.name) +
                    " block size " + std::to_string(info.block_elems));
  }
  // Up to 8 bytes per element: 2^62 F32 elements would wrap u64 to a small, plausible size
  // (found by gguf_fuzz, see docs/fuzzing.md), so check before multiplying.
  const uint64_t blocks = static_cast<uint64_t>(n_elements / info.block_elems);
  const uint64_t block_bytes = static_cast<uint64_t>(info.block_bytes);
  if (blocks > std::numeric_limits<uint64_t>::max() / block_bytes) {
    return BadInput(std::to_string(n_elements) + " " + std::string(info.name) +
                    " elements overflow a 64-bit byte size");
  }
  return blocks * block_bytes;
}

}  // namespace kvaudit

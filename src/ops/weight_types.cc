#include "ops/weight_types.h"

#include "base/status.h"

namespace kvaudit {
namespace {

// One row per WeightType, in enum order (sizes from ggml-common.h's static_asserts):
// block_q4_0 {f16 d; u8 qs[16]}, block_q4_1 {f16 d, m; qs[16]}, block_q5_0 {d; qh[4]; qs[16]},
// block_q5_1 {d, m; qh[4]; qs[16]}, block_q8_0 {d; i8 qs[32]};
// block_q2_K {u8 scales[16]; qs[64]; f16 d, dmin}, block_q3_K {hmask[32]; qs[64]; scales[12]; d},
// block_q4_K {d, dmin; scales[12]; qs[128]}, block_q5_K {d, dmin; scales[12]; qh[32]; qs[128]},
// block_q6_K {ql[128]; qh[64]; i8 scales[16]; d};
// block_iq4_nl {f16 d; qs[16]}, block_iq4_xs {f16 d; u16 scales_h; u8 scales_l[4]; qs[128]}.
constexpr WeightTypeInfo kTable[kNumWeightTypes] = {
    {"f32", 1, 4},        {"bf16", 1, 2},       {"f16", 1, 2},
    {"q4_0", 32, 18},     {"q4_1", 32, 20},     {"q5_0", 32, 22},   {"q5_1", 32, 24}, {"q8_0", 32, 34},
    {"q2_K", 256, 84},    {"q3_K", 256, 110},   {"q4_K", 256, 144}, {"q5_K", 256, 176}, {"q6_K", 256, 210},
    {"iq4_nl", 32, 18},   {"iq4_xs", 256, 136},
};
static_assert(static_cast<int>(WeightType::kIQ4_XS) + 1 == kNumWeightTypes, "kTable must cover every WeightType");
static_assert(kTable[static_cast<int>(WeightType::kQ2_K)].block_bytes == 16 + 64 + 2 + 2);
static_assert(kTable[static_cast<int>(WeightType::kQ3_K)].block_bytes == 32 + 64 + 12 + 2);
static_assert(kTable[static_cast<int>(WeightType::kIQ4_XS)].block_bytes == 2 + 2 + 4 + 128);

}  // namespace

const WeightTypeInfo& GetWeightTypeInfo(WeightType t) {
  const int i = static_cast<int>(t);
  KV_CHECK(i >= 0 && i < kNumWeightTypes);
  return kTable[i];
}

size_t WeightRowBytes(WeightType t, int64_t cols) {
  const WeightTypeInfo& info = GetWeightTypeInfo(t);
  KV_CHECK_MSG(cols >= 0 && cols % info.block_elems == 0, "a block-type row must be a whole number of blocks");
  return static_cast<size_t>(cols / info.block_elems) * static_cast<size_t>(info.block_bytes);
}

}  // namespace kvaudit

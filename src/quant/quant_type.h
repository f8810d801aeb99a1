// The element types a weight matrix can be kept in, in memory, as the file stores it: f32, the
// 16-bit floats, and ggml's block formats (ggml/src/ggml-common.h block_* structs). A block type
// packs `block_elems` consecutive elements of a row into `block_bytes` bytes; a row of a block
// type is a whole number of blocks (cols % block_elems == 0), so rows are independent.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvaudit {

enum class QuantType : uint8_t {
  kF32,
  kBF16,
  kF16,
  // ggml's legacy 32-element blocks
  kQ4_0,
  kQ4_1,
  kQ5_0,
  kQ5_1,
  kQ8_0,
  // K-quants: 256-element super-blocks
  kQ2_K,
  kQ3_K,
  kQ4_K,
  kQ5_K,
  kQ6_K,
  // non-linear 4-bit grids (IQ4_NL: 32-element blocks; IQ4_XS: 256-element super-blocks)
  kIQ4_NL,
  kIQ4_XS,
};
inline constexpr int kNumQuantTypes = 15;

struct QuantTraits {
  const char* name;  // lower case, as llama.cpp's tools print them ("q4_K", "iq4_xs")
  int block_elems;   // 1 for f32/bf16/f16
  int block_bytes;   // bytes of one block (4 or 2 for the plain types)
};

// One row per QuantType, in enum order (sizes from ggml-common.h's static_asserts):
// block_q4_0 {f16 d; u8 qs[16]}, block_q4_1 {f16 d, m; qs[16]}, block_q5_0 {d; qh[4]; qs[16]},
// block_q5_1 {d, m; qh[4]; qs[16]}, block_q8_0 {d; i8 qs[32]};
// block_q2_K {u8 scales[16]; qs[64]; f16 d, dmin}, block_q3_K {hmask[32]; qs[64]; scales[12]; d},
// block_q4_K {d, dmin; scales[12]; qs[128]}, block_q5_K {d, dmin; scales[12]; qh[32]; qs[128]},
// block_q6_K {ql[128]; qh[64]; i8 scales[16]; d};
// block_iq4_nl {f16 d; qs[16]}, block_iq4_xs {f16 d; u16 scales_h; u8 scales_l[4]; qs[128]}.
inline constexpr QuantTraits kQuantTable[kNumQuantTypes] = {
    {"f32", 1, 4},      {"bf16", 1, 2},     {"f16", 1, 2},      {"q4_0", 32, 18},   {"q4_1", 32, 20},
    {"q5_0", 32, 22},   {"q5_1", 32, 24},   {"q8_0", 32, 34},   {"q2_K", 256, 84},  {"q3_K", 256, 110},
    {"q4_K", 256, 144}, {"q5_K", 256, 176}, {"q6_K", 256, 210}, {"iq4_nl", 32, 18}, {"iq4_xs", 256, 136},
};
static_assert(static_cast<int>(QuantType::kIQ4_XS) + 1 == kNumQuantTypes, "kTable must cover every QuantType");
static_assert(kQuantTable[static_cast<int>(QuantType::kQ2_K)].block_bytes == 16 + 64 + 2 + 2);
static_assert(kQuantTable[static_cast<int>(QuantType::kQ3_K)].block_bytes == 32 + 64 + 12 + 2);
static_assert(kQuantTable[static_cast<int>(QuantType::kIQ4_XS)].block_bytes == 2 + 2 + 4 + 128);

// The table row of t (checked in range).
const QuantTraits& GetQuantTraits(QuantType t);
inline const char* QuantTypeName(QuantType t) { return GetQuantTraits(t).name; }
inline bool IsBlockType(QuantType t) { return t >= QuantType::kQ4_0; }
// Bytes of one row of `cols` elements, checked: t in range, cols a multiple of the block size.
size_t QuantRowBytesChecked(QuantType t, int64_t cols);
// The same without the checks, for the kernels' row addressing (WeightView::row): a view's type
// and cols were checked when its matrix was made (WeightMatrix::Resize / AddExternalPart).
inline size_t QuantRowBytes(QuantType t, int64_t cols) {
  const QuantTraits& info = kQuantTable[static_cast<int>(t)];
  return static_cast<size_t>(cols / info.block_elems) * static_cast<size_t>(info.block_bytes);
}

}  // namespace kvaudit

// The number formats kvaudit computes with, one traits row each (ggml's type_traits idea, over
// the whole program): f32, the 16-bit floats and ggml's block formats (ggml/src/ggml-common.h).
// A block type packs `block_elems` consecutive elements of a row into `block_bytes` bytes; a row
// of a block type is a whole number of blocks, so rows are independent. Weights (io, ops) and the
// KV cache (kv/formats) read the same row; io's DType and the cache's KvFormat map onto it
// (tests/unit/quant_type_test.cc checks both maps).
//
// Adding a block format: its layout in quant/ggml_blocks.h, its reference functions in
// quant/<format>.cc (declared in quant/block_formats.h), its row here, its test (docs/formats.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "quant/block_formats.h"

namespace kvaudit {

// The values are fixed: tests and the bit hashes iterate them in this order.
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
  // OCP MX fp4 (gpt-oss's experts): 32-element blocks, a power-of-two (E8M0) scale. Appended, so
  // the values above keep their order.
  kMXFP4,
};
inline constexpr int kNumQuantTypes = 16;

struct QuantTraits {
  QuantType id;
  const char* name;  // ggml's type name, as llama.cpp's tools print it ("q4_K", "iq4_xs")
  int block_elems;   // 1 for f32/bf16/f16
  int block_bytes;   // bytes of one block (4 or 2 for the plain types)
  // Byte offsets of a block's fp16 fields (d, then m or dmin), num_f16_fields of them (0 for the
  // plain types and mxfp4): where tests and benchmarks plant finite scales in random blocks.
  int f16_fields[2];
  int num_f16_fields;
  // Byte offset of a block's E8M0 scale (a biased power-of-two exponent byte: mxfp4's e), -1 if
  // none: where tests plant scales of a chosen magnitude (every byte is a finite scale, but the
  // largest make infinite weights).
  int e8m0_field;
  // The reference functions (quant/block_formats.h, bit-exact with ggml-quants.c); nullptr where a
  // format has none: the plain types have no blocks, kvaudit quantizes only the 32-element types a
  // KV cache can hold and mxfp4 (test and synthetic weights), and expands for llama.cpp's integer
  // dot the 32-element types (the KV cache's and mxfp4's; the K-quants have their own dots).
  void (*quantize_ref)(const float* x, uint8_t* dst, int64_t n);
  void (*dequantize_ref)(const uint8_t* src, float* y, int64_t n);
  void (*to_codes)(const uint8_t* row, int64_t n, ggml::BlockCodes out);
};

// One row per QuantType, in enum order (checked below); block sizes are the layouts' sizeof.
// clang-format off
inline constexpr QuantTraits kQuantTable[kNumQuantTypes] = {
  // id, name, block elems, block bytes, fp16 fields and their count, E8M0 field;
  //   reference quantize, dequantize, expanded codes
  {QuantType::kF32,     "f32",    1,            4,                        {-1, -1}, 0,  -1,
   nullptr,              nullptr,                nullptr},
  {QuantType::kBF16,    "bf16",   1,            2,                        {-1, -1}, 0,  -1,
   nullptr,              nullptr,                nullptr},
  {QuantType::kF16,     "f16",    1,            2,                        {-1, -1}, 0,  -1,
   nullptr,              nullptr,                nullptr},
  {QuantType::kQ4_0,    "q4_0",   ggml::kQK,    sizeof(ggml::BlockQ4_0),  {0, -1},  1,  -1,
   ggml::Q4_0Quantize,   ggml::Q4_0Dequantize,   ggml::Q4_0ToCodes},
  {QuantType::kQ4_1,    "q4_1",   ggml::kQK,    sizeof(ggml::BlockQ4_1),  {0, 2},   2,  -1,
   ggml::Q4_1Quantize,   ggml::Q4_1Dequantize,   ggml::Q4_1ToCodes},
  {QuantType::kQ5_0,    "q5_0",   ggml::kQK,    sizeof(ggml::BlockQ5_0),  {0, -1},  1,  -1,
   ggml::Q5_0Quantize,   ggml::Q5_0Dequantize,   ggml::Q5_0ToCodes},
  {QuantType::kQ5_1,    "q5_1",   ggml::kQK,    sizeof(ggml::BlockQ5_1),  {0, 2},   2,  -1,
   ggml::Q5_1Quantize,   ggml::Q5_1Dequantize,   ggml::Q5_1ToCodes},
  {QuantType::kQ8_0,    "q8_0",   ggml::kQK,    sizeof(ggml::BlockQ8_0),  {0, -1},  1,  -1,
   ggml::Q8_0Quantize,   ggml::Q8_0Dequantize,   ggml::Q8_0ToCodes},
  {QuantType::kQ2_K,    "q2_K",   ggml::kQK_K,  sizeof(ggml::BlockQ2_K),  {80, 82}, 2,  -1,
   nullptr,              ggml::Q2_KDequantize,   nullptr},
  {QuantType::kQ3_K,    "q3_K",   ggml::kQK_K,  sizeof(ggml::BlockQ3_K),  {108, -1}, 1, -1,
   nullptr,              ggml::Q3_KDequantize,   nullptr},
  {QuantType::kQ4_K,    "q4_K",   ggml::kQK_K,  sizeof(ggml::BlockQ4_K),  {0, 2},   2,  -1,
   nullptr,              ggml::Q4_KDequantize,   nullptr},
  {QuantType::kQ5_K,    "q5_K",   ggml::kQK_K,  sizeof(ggml::BlockQ5_K),  {0, 2},   2,  -1,
   nullptr,              ggml::Q5_KDequantize,   nullptr},
  {QuantType::kQ6_K,    "q6_K",   ggml::kQK_K,  sizeof(ggml::BlockQ6_K),  {208, -1}, 1, -1,
   nullptr,              ggml::Q6_KDequantize,   nullptr},
  {QuantType::kIQ4_NL,  "iq4_nl", ggml::kQK,    sizeof(ggml::BlockIq4Nl), {0, -1},  1,  -1,
   ggml::Iq4NlQuantize,  ggml::Iq4NlDequantize,  ggml::Iq4NlToCodes},
  {QuantType::kIQ4_XS,  "iq4_xs", ggml::kQK_K,  sizeof(ggml::BlockIq4Xs), {0, -1},  1,  -1,
   nullptr,              ggml::Iq4XsDequantize,  nullptr},
  {QuantType::kMXFP4,   "mxfp4",  ggml::kQK,    sizeof(ggml::BlockMxfp4), {-1, -1}, 0,  0,
   ggml::Mxfp4Quantize,  ggml::Mxfp4Dequantize,  ggml::Mxfp4ToCodes},
};
// clang-format on

static_assert(static_cast<int>(QuantType::kMXFP4) + 1 == kNumQuantTypes, "kQuantTable must cover every QuantType");
static_assert(
    [] {
      for (int i = 0; i < kNumQuantTypes; ++i) {
        const QuantTraits& r = kQuantTable[i];
        if (static_cast<int>(r.id) != i) return false;  // rows in enum order
        const bool has_scale = r.num_f16_fields > 0 || r.e8m0_field >= 0;
        if ((r.block_elems > 1) != has_scale) return false;  // every block has its scale, the plain types none
      }
      return true;
    }(),
    "kQuantTable: rows in enum order, an fp16 or E8M0 scale in every block type");
// The function columns (a dequantizer for every block type) are checked by quant_type_test:
// GCC does not fold a function pointer's comparison with null under -fsanitize=address.

// The table row of t (checked in range).
const QuantTraits& GetQuantTraits(QuantType t);
inline const char* QuantTypeName(QuantType t) { return GetQuantTraits(t).name; }
inline std::span<const int> F16Fields(QuantType t) {
  const QuantTraits& r = kQuantTable[static_cast<int>(t)];
  return {r.f16_fields, static_cast<size_t>(r.num_f16_fields)};
}
// The E8M0 scale's byte offset in a block, -1 if the type has none.
inline int E8M0Field(QuantType t) { return kQuantTable[static_cast<int>(t)].e8m0_field; }
inline bool IsBlockType(QuantType t) { return kQuantTable[static_cast<int>(t)].block_elems > 1; }
// Bytes of one row of `cols` elements, checked: t in range, cols a multiple of the block size.
size_t QuantRowBytesChecked(QuantType t, int64_t cols);
// The same without the checks, for the kernels' row addressing (WeightView::row): a view's type
// and cols were checked when its matrix was made (WeightMatrix::Resize / AddExternalPart).
inline size_t QuantRowBytes(QuantType t, int64_t cols) {
  const QuantTraits& info = kQuantTable[static_cast<int>(t)];
  return static_cast<size_t>(cols / info.block_elems) * static_cast<size_t>(info.block_bytes);
}

}  // namespace kvaudit

// SIMD twins of the 32-element block dequantizers (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4) and
// the DequantizeBlocks dispatch; the K family is in quant/dequantize_k_simd.cc. Each is bitwise its
// scalar reference in quant/dequantize.cc: the same integer codes, converted to f32 exactly, then the
// reference's f32 operations in its order (tests/unit/quant_dequantize_test.cc compares them).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"

#include <cstdint>
#include <cstring>

#include "base/half.h"
#include "base/status.h"
#include "quant/dequantize.h"

#include "base/fp_contract_off.h"  // ggml's two roundings for d*q - m

#define KVAUDIT_ISA_SELF "quant/dequantize_simd.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit {
void DequantizeBlocks(QuantType t, const uint8_t* src, float* dst, int64_t n) {
  KVAUDIT_DISPATCH(DequantizeBlocks, t, src, dst, n);
}
}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "quant/block_vec.inl.h"

#if defined(KVAUDIT_BLOCK_DEQUANT_SIMD)
namespace block_simd {
namespace {

constexpr int kL = V::kLanes;

// block_q8_0 {f16 d; i8 qs[32]}: y = qs * d.
void RowQ8_0(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ8_0), y += 32) {
    const V::F d = V::SplatF(LoadScale(b));
    for (int j = 0; j < 32; j += kL) V::Store(y + j, V::Mul(V::ToF(V::I8(b + 2 + j)), d));
  }
}

// block_q4_0 {f16 d; u8 qs[16]}: low nibbles are elements 0..15, high 16..31; y = (q-8)*d.
void RowQ4_0(const uint8_t* b, float* y, int64_t nb) {
  const V::I low4 = V::Splat(0x0F), eight = V::Splat(8);
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ4_0), y += 32) {
    const V::F d = V::SplatF(LoadScale(b));
    for (int j = 0; j < 16; j += kL) {
      const V::I q = V::U8(b + 2 + j);
      V::Store(y + j, V::Mul(V::ToF(V::Sub(V::And(q, low4), eight)), d));
      V::Store(y + 16 + j, V::Mul(V::ToF(V::Sub(V::Shr(q, 4), eight)), d));
    }
  }
}

// block_q4_1 {f16 d, m; u8 qs[16]}: y = q*d + m.
void RowQ4_1(const uint8_t* b, float* y, int64_t nb) {
  const V::I low4 = V::Splat(0x0F);
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ4_1), y += 32) {
    const V::F d = V::SplatF(LoadScale(b)), m = V::SplatF(LoadScale(b + 2));
    for (int j = 0; j < 16; j += kL) {
      const V::I q = V::U8(b + 4 + j);
      V::Store(y + j, V::AddF(V::Mul(V::ToF(V::And(q, low4)), d), m));
      V::Store(y + 16 + j, V::AddF(V::Mul(V::ToF(V::Shr(q, 4)), d), m));
    }
  }
}

// block_q5_0 {f16 d; u8 qh[4]; u8 qs[16]}: bit e of the little-endian u32 qh is the fifth bit of
// element e; y = ((q | h<<4) - 16) * d.
void RowQ5_0(const uint8_t* b, float* y, int64_t nb) {
  const V::I low4 = V::Splat(0x0F), sixteen = V::Splat(16);
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ5_0), y += 32) {
    const V::F d = V::SplatF(LoadScale(b));
    const V::Bits qh = V::LoadBits(LoadU32(b + 2));
    for (int j = 0; j < 16; j += kL) {
      const V::I q = V::U8(b + 6 + j);
      const V::I q0 = V::OrBit16(V::And(q, low4), qh, j);
      const V::I q1 = V::OrBit16(V::Shr(q, 4), qh, 16 + j);
      V::Store(y + j, V::Mul(V::ToF(V::Sub(q0, sixteen)), d));
      V::Store(y + 16 + j, V::Mul(V::ToF(V::Sub(q1, sixteen)), d));
    }
  }
}

// block_q5_1 {f16 d, m; u8 qh[4]; u8 qs[16]}: y = (q | h<<4)*d + m.
void RowQ5_1(const uint8_t* b, float* y, int64_t nb) {
  const V::I low4 = V::Splat(0x0F);
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ5_1), y += 32) {
    const V::F d = V::SplatF(LoadScale(b)), m = V::SplatF(LoadScale(b + 2));
    const V::Bits qh = V::LoadBits(LoadU32(b + 4));
    for (int j = 0; j < 16; j += kL) {
      const V::I q = V::U8(b + 8 + j);
      const V::I q0 = V::OrBit16(V::And(q, low4), qh, j);
      const V::I q1 = V::OrBit16(V::Shr(q, 4), qh, 16 + j);
      V::Store(y + j, V::AddF(V::Mul(V::ToF(q0), d), m));
      V::Store(y + 16 + j, V::AddF(V::Mul(V::ToF(q1), d), m));
    }
  }
}

// block_iq4_nl {f16 d; u8 qs[16]}: y = d * level[q].
void RowIQ4_NL(const uint8_t* b, float* y, int64_t nb) {
  const V::Table levels = V::LoadTable(kIq4NlLevelsF);
  const V::I low4 = V::Splat(0x0F);
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockIq4Nl), y += 32) {
    const V::F d = V::SplatF(LoadScale(b));
    for (int j = 0; j < 16; j += kL) {
      const V::I q = V::U8(b + 2 + j);
      V::Store(y + j, V::Mul(d, V::Lookup(levels, V::And(q, low4))));
      V::Store(y + 16 + j, V::Mul(d, V::Lookup(levels, V::Shr(q, 4))));
    }
  }
}

// block_mxfp4 {u8 e; u8 qs[16]}: y = level[q] * d, d = 2^(e-128) from the exponent byte (the
// reference's E8M0ToF32Half, a bit pattern: no conversion to twin). The product is the
// reference's one rounding (exact unless it overflows; subnormal d included, as MXCSR keeps
// subnormals: kvaudit never sets FTZ/DAZ).
void RowMXFP4(const uint8_t* b, float* y, int64_t nb) {
  const V::Table levels = V::LoadTable(kMxfp4LevelsF);
  const V::I low4 = V::Splat(0x0F);
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockMxfp4), y += 32) {
    const V::F d = V::SplatF(ggml::E8M0ToF32Half(b[0]));
    for (int j = 0; j < 16; j += kL) {
      const V::I q = V::U8(b + 1 + j);
      V::Store(y + j, V::Mul(V::Lookup(levels, V::And(q, low4)), d));
      V::Store(y + 16 + j, V::Mul(V::Lookup(levels, V::Shr(q, 4)), d));
    }
  }
}

}  // namespace
}  // namespace block_simd
#endif  // KVAUDIT_BLOCK_DEQUANT_SIMD

void DequantizeBlocks(QuantType t, const uint8_t* src, float* dst, int64_t n) {
#if defined(KVAUDIT_BLOCK_DEQUANT_SIMD)
  const QuantTraits& info = GetQuantTraits(t);
  KV_CHECK_MSG(IsBlockType(t), "DequantizeBlocks: not a block type");
  KV_CHECK(n >= 0 && n % info.block_elems == 0);
  const int64_t nb = n / info.block_elems;
  namespace s = block_simd;
  switch (t) {
    case QuantType::kQ8_0: return s::RowQ8_0(src, dst, nb);
    case QuantType::kQ4_0: return s::RowQ4_0(src, dst, nb);
    case QuantType::kQ4_1: return s::RowQ4_1(src, dst, nb);
    case QuantType::kQ5_0: return s::RowQ5_0(src, dst, nb);
    case QuantType::kQ5_1: return s::RowQ5_1(src, dst, nb);
    case QuantType::kQ2_K: return s::RowQ2_KSimd(src, dst, nb);
    case QuantType::kQ3_K: return s::RowQ3_KSimd(src, dst, nb);
    case QuantType::kQ4_K: return s::RowQ4_KSimd(src, dst, nb);
    case QuantType::kQ5_K: return s::RowQ5_KSimd(src, dst, nb);
    case QuantType::kQ6_K: return s::RowQ6_KSimd(src, dst, nb);
    case QuantType::kIQ4_NL: return s::RowIQ4_NL(src, dst, nb);
    case QuantType::kIQ4_XS: return s::RowIQ4_XSSimd(src, dst, nb);
    case QuantType::kMXFP4: return s::RowMXFP4(src, dst, nb);
    default: break;
  }
#endif
  DequantizeBlocksRef(t, src, dst, n);
}

#endif  // KVAUDIT_ISA_PASS

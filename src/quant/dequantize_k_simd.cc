// SIMD twins of the 256-element super-block dequantizers (q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs),
// bitwise their scalar references in quant/dequantize.cc (block layouts and formulas there). The
// per-16 or per-32 scales are computed once per block into small f32 tables with the reference's
// f32 product (d * sc), then broadcast; the elements take one cvt and the reference's mul / sub.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"

#include <cstdint>
#include <cstring>

#include "base/half.h"
#include "quant/dequantize.h"

#include "base/fp_contract_off.h"  // ggml's two roundings for d*q - m

#define KVAUDIT_ISA_SELF "quant/dequantize_k_simd.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "quant/block_vec.inl.h"

#if defined(KVAUDIT_BLOCK_DEQUANT_SIMD)
namespace block_simd {
namespace {

constexpr int kL = V::kLanes;

}  // namespace

// q2_K: dl[k] = d * (scales[k] & 15), ml[k] = dmin * (scales[k] >> 4); element 32j + l of half h is
// bits 2j.. of qs[32h + l] and uses k = 8h + 2j + l/16; y = dl[k]*q - ml[k].
void RowQ2_KSimd(const uint8_t* b, float* y, int64_t nb) {
  const V::I low4 = V::Splat(0x0F), three = V::Splat(3);
  alignas(64) float dl[16], ml[16];
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ2_K), y += 256) {
    const V::F d = V::SplatF(LoadScale(b + 80)), dmin = V::SplatF(LoadScale(b + 82));
    for (int j = 0; j < 16; j += kL) {
      const V::I s = V::U8(b + j);
      V::Store(dl + j, V::Mul(d, V::ToF(V::And(s, low4))));
      V::Store(ml + j, V::Mul(dmin, V::ToF(V::Shr(s, 4))));
    }
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; l += kL) {
        const V::I q = V::U8(b + 16 + 32 * h + l);
        for (int j = 0; j < 4; ++j) {
          const int k = 8 * h + 2 * j + l / 16;
          const V::F v = V::ToF(V::And(V::Shr(q, 2 * j), three));
          V::Store(y + 128 * h + 32 * j + l, V::SubF(V::Mul(V::BroadcastF(dl + k), v), V::BroadcastF(ml + k)));
        }
      }
    }
  }
}

// q3_K: the 16 biased 6-bit scales unpacked four at a time from the three scale words (ScaleK3 in
// quant/dequantize.cc, byte-parallel); ds[k] = d * (sc - 32); y = ds[k] * (low + 4*hbit - 4).
void RowQ3_KSimd(const uint8_t* b, float* y, int64_t nb) {
  const V::I one = V::Splat(1), three = V::Splat(3), four = V::Splat(4), bias = V::Splat(32);
  alignas(64) float ds[16];
  alignas(16) uint8_t sc6[16];
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ3_K), y += 256) {
    const V::F d = V::SplatF(LoadScale(b + 108));
    const uint32_t w0 = LoadU32(b + 96), w1 = LoadU32(b + 100), w2 = LoadU32(b + 104);
    const uint32_t nib = 0x0F0F0F0Fu, two = 0x03030303u;
    const uint32_t s[4] = {(w0 & nib) | ((w2 & two) << 4), (w1 & nib) | (((w2 >> 2) & two) << 4),
                           ((w0 >> 4) & nib) | (((w2 >> 4) & two) << 4), ((w1 >> 4) & nib) | (((w2 >> 6) & two) << 4)};
    std::memcpy(sc6, s, 16);
    for (int j = 0; j < 16; j += kL) V::Store(ds + j, V::Mul(d, V::ToF(V::Sub(V::U8(sc6 + j), bias))));
    V::I hm[32 / kL];
    for (int l = 0; l < 32; l += kL) hm[l / kL] = V::U8(b + l);
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; l += kL) {
        const V::I q = V::U8(b + 32 + 32 * h + l);
        for (int j = 0; j < 4; ++j) {
          const int k = 8 * h + 2 * j + l / 16;
          const V::I low = V::And(V::Shr(q, 2 * j), three);
          const V::I high = V::And(V::Shr(hm[l / kL], 4 * h + j), one);
          const V::F v = V::ToF(V::Sub(V::Or(low, V::Shl(high, 2)), four));
          V::Store(y + 128 * h + 32 * j + l, V::Mul(V::BroadcastF(ds + k), v));
        }
      }
    }
  }
}

// q4_K: chunk c of 64 = 32 bytes, low nibbles with pair 2c, high with 2c+1; y = dsc*q - dmn.
void RowQ4_KSimd(const uint8_t* b, float* y, int64_t nb) {
  const V::I low4 = V::Splat(0x0F);
  alignas(32) float dsc[8], dmn[8];
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ4_K)) {
    ScalesK4(b + 4, LoadScale(b), LoadScale(b + 2), dsc, dmn);
    const uint8_t* q = b + 16;
    for (int c = 0; c < 4; ++c, q += 32, y += 64) {
      const V::F d1 = V::BroadcastF(dsc + 2 * c), m1 = V::BroadcastF(dmn + 2 * c);
      const V::F d2 = V::BroadcastF(dsc + 2 * c + 1), m2 = V::BroadcastF(dmn + 2 * c + 1);
      for (int l = 0; l < 32; l += kL) {
        const V::I v = V::U8(q + l);
        V::Store(y + l, V::SubF(V::Mul(d1, V::ToF(V::And(v, low4))), m1));
        V::Store(y + 32 + l, V::SubF(V::Mul(d2, V::ToF(V::Shr(v, 4))), m2));
      }
    }
  }
}

// q5_K: q4_K plus the fifth bit, bit 2c (low half) / 2c+1 (high half) of qh[l].
void RowQ5_KSimd(const uint8_t* b, float* y, int64_t nb) {
  const V::I low4 = V::Splat(0x0F), sixteen = V::Splat(16);
  alignas(32) float dsc[8], dmn[8];
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ5_K)) {
    ScalesK4(b + 4, LoadScale(b), LoadScale(b + 2), dsc, dmn);
    V::I qh4[32 / kL];  // qh[l] << 4: bit n of qh lands on 16 after a right shift by n
    for (int l = 0; l < 32; l += kL) qh4[l / kL] = V::Shl(V::U8(b + 16 + l), 4);
    const uint8_t* ql = b + 48;
    for (int c = 0; c < 4; ++c, ql += 32, y += 64) {
      const V::F d1 = V::BroadcastF(dsc + 2 * c), m1 = V::BroadcastF(dmn + 2 * c);
      const V::F d2 = V::BroadcastF(dsc + 2 * c + 1), m2 = V::BroadcastF(dmn + 2 * c + 1);
      for (int l = 0; l < 32; l += kL) {
        const V::I v = V::U8(ql + l), h = qh4[l / kL];
        const V::I lo = V::Or(V::And(v, low4), V::And(V::Shr(h, 2 * c), sixteen));
        const V::I hi = V::Or(V::Shr(v, 4), V::And(V::Shr(h, 2 * c + 1), sixteen));
        V::Store(y + l, V::SubF(V::Mul(d1, V::ToF(lo)), m1));
        V::Store(y + 32 + l, V::SubF(V::Mul(d2, V::ToF(hi)), m2));
      }
    }
  }
}

// q6_K: ds[k] = d * scales[k] (one per 16 elements); in each half of 128, the four quarters take
// the low / high nibbles of ql[l] and ql[l+32] and bit pairs 0, 2, 4, 6 of qh[l]; y = ds * (q - 32).
void RowQ6_KSimd(const uint8_t* b, float* y, int64_t nb) {
  const V::I low4 = V::Splat(0x0F), top2 = V::Splat(0x30), bias = V::Splat(32);
  alignas(64) float ds[16];
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockQ6_K)) {
    const V::F d = V::SplatF(LoadScale(b + 208));
    for (int j = 0; j < 16; j += kL) V::Store(ds + j, V::Mul(d, V::ToF(V::I8(b + 192 + j))));
    for (int n = 0; n < 2; ++n, y += 128) {
      const uint8_t* ql = b + 64 * n;
      const uint8_t* qh = b + 128 + 32 * n;
      const float* s = ds + 8 * n;
      for (int l = 0; l < 32; l += kL) {
        const V::I a = V::U8(ql + l), c = V::U8(ql + 32 + l), h = V::U8(qh + l);
        const V::I q1 = V::Or(V::And(a, low4), V::And(V::Shl(h, 4), top2));
        const V::I q2 = V::Or(V::And(c, low4), V::And(V::Shl(h, 2), top2));
        const V::I q3 = V::Or(V::Shr(a, 4), V::And(h, top2));
        const V::I q4 = V::Or(V::Shr(c, 4), V::And(V::Shr(h, 2), top2));
        const int is = l / 16;
        V::Store(y + l, V::Mul(V::BroadcastF(s + is), V::ToF(V::Sub(q1, bias))));
        V::Store(y + 32 + l, V::Mul(V::BroadcastF(s + is + 2), V::ToF(V::Sub(q2, bias))));
        V::Store(y + 64 + l, V::Mul(V::BroadcastF(s + is + 4), V::ToF(V::Sub(q3, bias))));
        V::Store(y + 96 + l, V::Mul(V::BroadcastF(s + is + 6), V::ToF(V::Sub(q4, bias))));
      }
    }
  }
}

// iq4_xs: dl = d * (ls - 32) per 32-element sub-block (scalar, as the reference), then
// iq4_nl's nibbles; y = dl * level[q].
void RowIQ4_XSSimd(const uint8_t* b, float* y, int64_t nb) {
  const V::Table levels = V::LoadTable(kIq4NlLevelsF);
  const V::I low4 = V::Splat(0x0F);
  for (int64_t i = 0; i < nb; ++i, b += sizeof(ggml::BlockIq4Xs)) {
    const float d = LoadScale(b);
    uint16_t scales_h;
    std::memcpy(&scales_h, b + 2, 2);
    const uint8_t* qs = b + 8;
    for (int k = 0; k < 8; ++k, qs += 16, y += 32) {
      const int ls = ((b[4 + k / 2] >> (4 * (k % 2))) & 0x0F) | (((scales_h >> (2 * k)) & 3) << 4);
      const V::F dl = V::SplatF(d * static_cast<float>(ls - 32));
      for (int j = 0; j < 16; j += kL) {
        const V::I v = V::U8(qs + j);
        V::Store(y + j, V::Mul(dl, V::Lookup(levels, V::And(v, low4))));
        V::Store(y + 16 + j, V::Mul(dl, V::Lookup(levels, V::Shr(v, 4))));
      }
    }
  }
}

}  // namespace block_simd
#endif  // KVAUDIT_BLOCK_DEQUANT_SIMD
#endif  // KVAUDIT_ISA_PASS

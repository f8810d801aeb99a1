#include "quant/dequantize.h"

#include <cstring>

#include "base/half.h"
#include "base/status.h"

#include "base/fp_contract_off.h"  // ggml's two roundings for d*q - m

namespace kvaudit {
namespace {

constexpr int kQK = 32;     // QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0 (ggml-common.h)
constexpr int kQK_K = 256;  // super-block size of the K-quants

inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float LoadF16(const uint8_t* p) { return F16ToF32(LoadU16(p)); }

// block_q8_0 {f16 d; i8 qs[32]}: y = qs * d.
void RowQ8_0(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 34, y += kQK) {
    const float d = LoadF16(b);
    for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
  }
}

// block_q4_0 {f16 d; u8 qs[16]}: low nibbles are elements 0..15, high nibbles 16..31; y = (q-8)*d.
void RowQ4_0(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 18, y += kQK) {
    const float d = LoadF16(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((qs[j] >> 4) - 8) * d;
    }
  }
}

// block_q4_1 {f16 d, m; u8 qs[16]}: y = q*d + m.
void RowQ4_1(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 20, y += kQK) {
    const float d = LoadF16(b);
    const float m = LoadF16(b + 2);
    const uint8_t* qs = b + 4;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
      y[j + kQK / 2] = static_cast<float>(qs[j] >> 4) * d + m;
    }
  }
}

// block_q5_0 {f16 d; u8 qh[4]; u8 qs[16]}: bit j of the little-endian u32 qh is the 5th bit of
// element j; y = (q-16)*d.
void RowQ5_0(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 22, y += kQK) {
    const float d = LoadF16(b);
    const uint32_t qh = LoadU32(b + 2);
    const uint8_t* qs = b + 6;
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = ((qh >> j) << 4) & 0x10;
      const int h1 = (qh >> (j + 12)) & 0x10;
      y[j] = static_cast<float>(((qs[j] & 0x0F) | h0) - 16) * d;
      y[j + kQK / 2] = static_cast<float>(((qs[j] >> 4) | h1) - 16) * d;
    }
  }
}

// block_q5_1 {f16 d, m; u8 qh[4]; u8 qs[16]}: y = q*d + m.
void RowQ5_1(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 24, y += kQK) {
    const float d = LoadF16(b);
    const float m = LoadF16(b + 2);
    const uint32_t qh = LoadU32(b + 4);
    const uint8_t* qs = b + 8;
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = ((qh >> j) << 4) & 0x10;
      const int h1 = (qh >> (j + 12)) & 0x10;
      y[j] = static_cast<float>((qs[j] & 0x0F) | h0) * d + m;
      y[j + kQK / 2] = static_cast<float>((qs[j] >> 4) | h1) * d + m;
    }
  }
}

// The 12 packed scale bytes of q4_K/q5_K hold eight 6-bit (scale, min) pairs: pairs 0..3 in the low
// 6 bits of bytes 0..3 / 4..7; pairs 4..7 take their low 4 bits from bytes 8..11 and their top
// 2 bits from the spare top bits of bytes 0..7 (get_scale_min_k4 in ggml-quants.c).
inline void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// block_q4_K {f16 d, dmin; u8 scales[12]; u8 qs[128]}: each 64 elements use 32 bytes of qs, low
// nibbles with pair 2c, high nibbles with pair 2c+1; y = (d*sc)*q - (dmin*m).
void RowQ4_K(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 144) {
    const float d = LoadF16(b);
    const float dmin = LoadF16(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* q = b + 16;
    for (int c = 0; c < kQK_K / 64; ++c, q += 32) {
      int sc, m;
      ScaleMinK4(2 * c, scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      ScaleMinK4(2 * c + 1, scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

// block_q5_K {f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: as q4_K plus a 5th bit from
// qh[l], bit 2c for the low-nibble half and bit 2c+1 for the high-nibble half.
void RowQ5_K(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 176) {
    const float d = LoadF16(b);
    const float dmin = LoadF16(b + 2);
    const uint8_t* scales = b + 4;
    const uint8_t* qh = b + 16;
    const uint8_t* ql = b + 48;
    uint8_t u1 = 1, u2 = 2;
    for (int c = 0; c < kQK_K / 64; ++c, ql += 32, u1 <<= 2, u2 <<= 2) {
      int sc, m;
      ScaleMinK4(2 * c, scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      ScaleMinK4(2 * c + 1, scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc), m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + ((qh[l] & u1) ? 16 : 0)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      }
    }
  }
}

// block_q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: two halves of 128 elements; in each,
// four quarters of 32 take low/high nibbles of ql and 2-bit fields of qh; one scale per 16.
void RowQ6_K(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 210) {
    const float d = LoadF16(b + 208);
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// block_q2_K {u8 scales[16]; u8 qs[64]; f16 d, dmin}: scales[k] holds the 4-bit scale (low) and
// min (high) of elements 16k..16k+15. Each 128 elements use 32 bytes of qs: element 32j + l of
// the half (j = 0..3, l = 0..31) is bits 2j..2j+1 of qs[l]; y = (d*sc)*q - (dmin*m), as
// dequantize_row_q2_K in ggml-quants.c.
void RowQ2_K(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 84) {
    const uint8_t* scales = b;
    const uint8_t* q = b + 16;
    const float d = LoadF16(b + 80);
    const float dmin = LoadF16(b + 82);
    for (int n = 0; n < kQK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int half = 0; half < 2; ++half) {
          const uint8_t sc = *scales++;
          const float dl = d * static_cast<float>(sc & 0x0F), ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 16 * half; l < 16 * half + 16; ++l) *y++ = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

// The 12 scale bytes of q3_K hold sixteen 6-bit scales, biased by 32: scale k takes its low 4 bits
// from byte k (k < 8, low nibble) or byte k-8 (high nibble), and its top 2 bits from bits
// 2(k/4)..2(k/4)+1 of byte 8 + k%4 (the aux[] shuffle of dequantize_row_q3_K in ggml-quants.c).
inline int ScaleK3(int k, const uint8_t* s) {
  const int lo = k < 8 ? s[k] & 0x0F : s[k - 8] >> 4;
  const int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
  return (lo | (hi << 4)) - 32;
}

// block_q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}: 2 low bits as q2_K's (element
// 32j + l of half h is bits 2j.. of qs[32h + l]), the third bit is bit 4h + j of hmask[l], and a
// clear bit subtracts 4; one scale per 16 elements; y = (d*sc) * (q - 4*!hbit).
void RowQ3_K(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 110) {
    const uint8_t* hm = b;
    const uint8_t* q = b + 32;
    const uint8_t* scales = b + 96;
    const float d = LoadF16(b + 108);
    int k = 0;
    uint8_t m = 1;
    for (int n = 0; n < kQK_K; n += 128, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (int half = 0; half < 2; ++half) {
          const float dl = d * static_cast<float>(ScaleK3(k++, scales));
          for (int l = 16 * half; l < 16 * half + 16; ++l) {
            *y++ = dl * static_cast<float>(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
          }
        }
      }
    }
  }
}

// kvalues_iq4nl (ggml-common.h): the 16 levels of the non-linear 4-bit grid.
constexpr int8_t kIq4NlLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// block_iq4_nl {f16 d; u8 qs[16]}: nibbles as q4_0's; y = d * kvalues_iq4nl[q].
void RowIQ4_NL(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 18, y += kQK) {
    const float d = LoadF16(b);
    const uint8_t* qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(kIq4NlLevels[qs[j] & 0x0F]);
      y[j + kQK / 2] = d * static_cast<float>(kIq4NlLevels[qs[j] >> 4]);
    }
  }
}

// block_iq4_xs {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: eight 32-element sub-blocks, each
// with a 6-bit scale biased by 32 (low 4 bits: nibble k%2 of scales_l[k/2]; top 2 bits: bits 2k.. of
// scales_h) and iq4_nl's nibble layout in its 16 bytes of qs; y = (d*(ls-32)) * kvalues_iq4nl[q].
void RowIQ4_XS(const uint8_t* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 136) {
    const float d = LoadF16(b);
    const uint16_t scales_h = LoadU16(b + 2);
    const uint8_t* scales_l = b + 4;
    const uint8_t* qs = b + 8;
    for (int k = 0; k < kQK_K / 32; ++k, qs += 16, y += 32) {
      const int ls = ((scales_l[k / 2] >> (4 * (k % 2))) & 0x0F) | (((scales_h >> (2 * k)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4NlLevels[qs[j] & 0x0F]);
        y[j + 16] = dl * static_cast<float>(kIq4NlLevels[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace

void DequantizeBlocksRef(QuantType t, const uint8_t* src, float* dst, int64_t n) {
  const QuantTraits& info = GetQuantTraits(t);
  KV_CHECK_MSG(IsBlockType(t), "DequantizeBlocksRef: not a block type");
  KV_CHECK(n >= 0 && n % info.block_elems == 0);
  const int64_t nb = n / info.block_elems;
  switch (t) {
    case QuantType::kQ8_0: return RowQ8_0(src, dst, nb);
    case QuantType::kQ4_0: return RowQ4_0(src, dst, nb);
    case QuantType::kQ4_1: return RowQ4_1(src, dst, nb);
    case QuantType::kQ5_0: return RowQ5_0(src, dst, nb);
    case QuantType::kQ5_1: return RowQ5_1(src, dst, nb);
    case QuantType::kQ4_K: return RowQ4_K(src, dst, nb);
    case QuantType::kQ5_K: return RowQ5_K(src, dst, nb);
    case QuantType::kQ6_K: return RowQ6_K(src, dst, nb);
    case QuantType::kQ2_K: return RowQ2_K(src, dst, nb);
    case QuantType::kQ3_K: return RowQ3_K(src, dst, nb);
    case QuantType::kIQ4_NL: return RowIQ4_NL(src, dst, nb);
    case QuantType::kIQ4_XS: return RowIQ4_XS(src, dst, nb);
    default: KV_CHECK_MSG(false, "DequantizeBlocksRef: not a block type");
  }
}

// DequantizeBlocks, the SIMD twin, is in quant/dequantize_simd.cc.

}  // namespace kvaudit

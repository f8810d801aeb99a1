// Q5_1: block = fp16 d, fp16 m, uint32 qh (5th bits), 16 bytes of nibbles; value = code * d + m.
#include "ops/simd.h"  // first: wraps <immintrin.h>

#include "kv/format_q5_1.h"

#include <cfloat>

#include "kv/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 24;  // sizeof(block_q5_1)
static_assert(kBytes == sizeof(ggml::BlockQ5_1));
}  // namespace

namespace detail {

// quantize_row_q5_1_ref: d = (max - min) / 31, code = (uint8_t)((x - min)/d + 0.5f) (no clamp in
// ggml: the argument stays below 32 for finite input) with the unrounded f32 min and d.
void Q5_1Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < ggml::kQK; ++j) {
      if (x[j] < min) min = x[j];
      if (x[j] > max) max = x[j];
    }
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml::StoreF16(dst, d);
    ggml::StoreF16(dst + 2, min);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const uint8_t xi0 = ggml::TruncF32ToU8(ggml::Rounded((x[j] - min) * id) + 0.5f);
      const uint8_t xi1 = ggml::TruncF32ToU8(ggml::Rounded((x[j + 16] - min) * id) + 0.5f);
      dst[8 + j] = static_cast<uint8_t>((xi0 & 0x0f) | ((xi1 & 0x0f) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(dst + 4, &qh, 4);  // little-endian, as ggml's memcpy on x86
  }
}

// dequantize_row_q5_1.
void Q5_1Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    const float m = ggml::LoadF16(src + 2);
    const uint32_t qh = ggml::LoadU32(src + 4);
    for (int j = 0; j < 16; ++j) {
      const int x0 = (src[8 + j] & 0x0f) | (((qh >> j) << 4) & 0x10);
      const int x1 = (src[8 + j] >> 4) | ((qh >> (j + 12)) & 0x10);
      y[j] = ggml::Rounded(static_cast<float>(x0) * d) + m;  // x*d + m, two roundings (no FMA)
      y[j + 16] = ggml::Rounded(static_cast<float>(x1) * d) + m;
    }
  }
}

float Q5_1DotScalar(const uint8_t* src, const float* q, int64_t n) {
  float v[ggml::kQK];  // [32] one dequantized block
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Q5_1Dequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) sum += v[j] * q[i + j];
  }
  return sum;
}

void Q5_1AxpyScalar(const uint8_t* src, float w, float* acc, int64_t n) {
  float v[ggml::kQK];  // [32]
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Q5_1Dequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) acc[i + j] += w * v[j];
  }
}

#if defined(__AVX512F__)
namespace {
// The 32 code values of one block as two f32 vectors: 5-bit index = nibble | qh bit << 4, looked
// up in a 32-entry table (vpermt2ps: index bit 4 picks the table half).
struct Values32 { __m512 lo, hi; };
inline Values32 Decode(const uint8_t* blk, __m512 t0, __m512 t1) {
  const uint32_t qh = ggml::LoadU32(blk + 4);
  const __m512i bytes = ggml::LoadNibbleBytes(blk + 8);
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i ilo = _mm512_and_si512(bytes, _mm512_set1_epi32(0x0f));
  __m512i ihi = _mm512_srli_epi32(bytes, 4);
  ilo = _mm512_mask_or_epi32(ilo, static_cast<__mmask16>(qh & 0xffffu), ilo, sixteen);
  ihi = _mm512_mask_or_epi32(ihi, static_cast<__mmask16>(qh >> 16), ihi, sixteen);
  return {_mm512_permutex2var_ps(t0, ilo, t1), _mm512_permutex2var_ps(t0, ihi, t1)};
}
inline __m512 TableLo() { return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
inline __m512 TableHi() { return _mm512_setr_ps(16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31); }
}  // namespace

// dot = d·Σ c_j q_j + m·Σ q_j per block (f32 lanes; d and m factored out).
float Q5_1DotSimd(const uint8_t* src, const float* q, int64_t n) {
  const __m512 t0 = TableLo(), t1 = TableHi();
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    const Values32 v = Decode(src, t0, t1);
    const __m512 q0 = _mm512_loadu_ps(q + i), q1 = _mm512_loadu_ps(q + i + 16);
    __m512 t = _mm512_mul_ps(v.lo, q0);
    t = _mm512_fmadd_ps(v.hi, q1, t);
    acc = _mm512_fmadd_ps(t, ggml::BroadcastF16(src), acc);
    acc = _mm512_fmadd_ps(_mm512_add_ps(q0, q1), ggml::BroadcastF16(src + 2), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

// acc += w · (c·d + m), the value rounded as dequantize_row_q5_1 rounds it, then one FMA.
void Q5_1AxpySimd(const uint8_t* src, float w, float* acc, int64_t n) {
  const __m512 t0 = TableLo(), t1 = TableHi();
  const __m512 vw = _mm512_set1_ps(w);
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    const __m512 d = ggml::BroadcastF16(src), m = ggml::BroadcastF16(src + 2);
    const Values32 v = Decode(src, t0, t1);
    const __m512 lo = _mm512_add_ps(_mm512_mul_ps(v.lo, d), m);
    const __m512 hi = _mm512_add_ps(_mm512_mul_ps(v.hi, d), m);
    _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(lo, vw, _mm512_loadu_ps(acc + i)));
    _mm512_storeu_ps(acc + i + 16, _mm512_fmadd_ps(hi, vw, _mm512_loadu_ps(acc + i + 16)));
  }
}
#else
float Q5_1DotSimd(const uint8_t* src, const float* q, int64_t n) { return Q5_1DotScalar(src, q, n); }
void Q5_1AxpySimd(const uint8_t* src, float w, float* acc, int64_t n) { Q5_1AxpyScalar(src, w, acc, n); }
#endif

}  // namespace detail

const RowCodec& Q5_1Codec() {
  static const RowCodec codec = {
      "q5_1",
      ggml::kQK,
      [](int64_t n, const CodecParams&) -> uint64_t { return static_cast<uint64_t>(n / ggml::kQK) * kBytes; },
      [](int64_t, const CodecParams&) { return kBytes * 8.0 / ggml::kQK; },
      [](const float* x, uint8_t* dst, int64_t n, const CodecParams&) { detail::Q5_1Quantize(x, dst, n); },
      [](const uint8_t* src, float* y, int64_t n, const CodecParams&) { detail::Q5_1Dequantize(src, y, n); },
      [](const uint8_t* src, const float* q, int64_t n, const CodecParams&) { return detail::Q5_1DotSimd(src, q, n); },
      [](const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
        detail::Q5_1AxpySimd(src, w, acc, n);
      },
  };
  return codec;
}

}  // namespace kvaudit

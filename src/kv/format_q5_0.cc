// Q5_0: block = fp16 d, uint32 qh (5th bits), 16 bytes of nibbles; value = (code - 16) * d.
#include "ops/simd.h"  // first: wraps <immintrin.h>

#include "kv/format_q5_0.h"

#include <cmath>

#include "kv/ggml_blocks.h"

namespace kvaudit {
namespace {
constexpr int kBytes = 22;  // sizeof(block_q5_0)
static_assert(kBytes == sizeof(ggml::BlockQ5_0));
}  // namespace

namespace detail {

// quantize_row_q5_0_ref: d = (signed value of largest |x|, first wins) / -16, code =
// min(31, (int8_t)(x/d + 16.5f)) with the unrounded f32 d; bit 4 of code j goes to qh bit j.
void Q5_0Quantize(const float* x, uint8_t* dst, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, x += ggml::kQK, dst += kBytes) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < ggml::kQK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    ggml::StoreF16(dst, d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int8_t c0 = ggml::TruncF32ToI8(ggml::Rounded(x[j] * id) + 16.5f);
      const int8_t c1 = ggml::TruncF32ToI8(ggml::Rounded(x[j + 16] * id) + 16.5f);
      const uint8_t xi0 = static_cast<uint8_t>(c0 < 31 ? c0 : 31);
      const uint8_t xi1 = static_cast<uint8_t>(c1 < 31 ? c1 : 31);
      dst[6 + j] = static_cast<uint8_t>((xi0 & 0x0f) | ((xi1 & 0x0f) << 4));
      qh |= ((xi0 & 0x10u) >> 4) << j;
      qh |= ((xi1 & 0x10u) >> 4) << (j + 16);
    }
    std::memcpy(dst + 2, &qh, 4);  // little-endian, as ggml's memcpy on x86
  }
}

// dequantize_row_q5_0.
void Q5_0Dequantize(const uint8_t* src, float* y, int64_t n) {
  for (int64_t b = 0; b < n / ggml::kQK; ++b, src += kBytes, y += ggml::kQK) {
    const float d = ggml::LoadF16(src);
    const uint32_t qh = ggml::LoadU32(src + 2);
    for (int j = 0; j < 16; ++j) {
      const int x0 = ((src[6 + j] & 0x0f) | (((qh >> j) << 4) & 0x10)) - 16;
      const int x1 = ((src[6 + j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16;
      y[j] = static_cast<float>(x0) * d;
      y[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

float Q5_0DotScalar(const uint8_t* src, const float* q, int64_t n) {
  float v[ggml::kQK];  // [32] one dequantized block
  float sum = 0.0f;
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Q5_0Dequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) sum += v[j] * q[i + j];
  }
  return sum;
}

void Q5_0AxpyScalar(const uint8_t* src, float w, float* acc, int64_t n) {
  float v[ggml::kQK];  // [32]
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    Q5_0Dequantize(src, v, ggml::kQK);
    for (int j = 0; j < ggml::kQK; ++j) acc[i + j] += w * v[j];
  }
}

#if defined(__AVX512F__)
namespace {
// The 32 code values of one block as two f32 vectors: 5-bit index = nibble | qh bit << 4, looked
// up in a 32-entry table (vpermt2ps: index bit 4 picks the table half).
struct Values32 { __m512 lo, hi; };
inline Values32 Decode(const uint8_t* blk, __m512 t0, __m512 t1) {
  const uint32_t qh = ggml::LoadU32(blk + 2);
  const __m512i bytes = ggml::LoadNibbleBytes(blk + 6);
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i ilo = _mm512_and_si512(bytes, _mm512_set1_epi32(0x0f));
  __m512i ihi = _mm512_srli_epi32(bytes, 4);
  ilo = _mm512_mask_or_epi32(ilo, static_cast<__mmask16>(qh & 0xffffu), ilo, sixteen);
  ihi = _mm512_mask_or_epi32(ihi, static_cast<__mmask16>(qh >> 16), ihi, sixteen);
  return {_mm512_permutex2var_ps(t0, ilo, t1), _mm512_permutex2var_ps(t0, ihi, t1)};
}
inline __m512 TableLo() { return _mm512_setr_ps(-16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1); }
inline __m512 TableHi() { return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
}  // namespace

// dot: Σ_j (c_j - 16)·q_j in f32 lanes, then acc += d · that.
float Q5_0DotSimd(const uint8_t* src, const float* q, int64_t n) {
  const __m512 t0 = TableLo(), t1 = TableHi();
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    const Values32 v = Decode(src, t0, t1);
    __m512 t = _mm512_mul_ps(v.lo, _mm512_loadu_ps(q + i));
    t = _mm512_fmadd_ps(v.hi, _mm512_loadu_ps(q + i + 16), t);
    acc = _mm512_fmadd_ps(t, ggml::BroadcastF16(src), acc);
  }
  return _mm512_reduce_add_ps(acc);
}

// acc += w · ((c - 16)·d), the value rounded as dequantize_row_q5_0 rounds it, then one FMA.
void Q5_0AxpySimd(const uint8_t* src, float w, float* acc, int64_t n) {
  const __m512 t0 = TableLo(), t1 = TableHi();
  const __m512 vw = _mm512_set1_ps(w);
  for (int64_t i = 0; i < n; i += ggml::kQK, src += kBytes) {
    const __m512 d = ggml::BroadcastF16(src);
    const Values32 v = Decode(src, t0, t1);
    _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(_mm512_mul_ps(v.lo, d), vw, _mm512_loadu_ps(acc + i)));
    _mm512_storeu_ps(acc + i + 16, _mm512_fmadd_ps(_mm512_mul_ps(v.hi, d), vw, _mm512_loadu_ps(acc + i + 16)));
  }
}
#else
float Q5_0DotSimd(const uint8_t* src, const float* q, int64_t n) { return Q5_0DotScalar(src, q, n); }
void Q5_0AxpySimd(const uint8_t* src, float w, float* acc, int64_t n) { Q5_0AxpyScalar(src, w, acc, n); }
#endif

}  // namespace detail

const RowCodec& Q5_0Codec() {
  static const RowCodec codec = {
      "q5_0",
      ggml::kQK,
      [](int64_t n, const CodecParams&) -> uint64_t { return static_cast<uint64_t>(n / ggml::kQK) * kBytes; },
      [](int64_t, const CodecParams&) { return kBytes * 8.0 / ggml::kQK; },
      [](const float* x, uint8_t* dst, int64_t n, const CodecParams&) { detail::Q5_0Quantize(x, dst, n); },
      [](const uint8_t* src, float* y, int64_t n, const CodecParams&) { detail::Q5_0Dequantize(src, y, n); },
      [](const uint8_t* src, const float* q, int64_t n, const CodecParams&) { return detail::Q5_0DotSimd(src, q, n); },
      [](const uint8_t* src, float w, float* acc, int64_t n, const CodecParams&) {
        detail::Q5_0AxpySimd(src, w, acc, n);
      },
  };
  return codec;
}

}  // namespace kvaudit

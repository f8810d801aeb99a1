// Loading W elements as f32 in the kernels of matmul.cc / gemv.cc (internal to ops/). Every upcast
// is exact (bf16: a 16-bit shift; f16: vcvtph2ps or the bit-exact scalar F16ToF32), so a 16-bit W
// runs the arithmetic of the same W upcast to f32.
#pragma once

#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include "base/half.h"
#include "ops/weight_matrix.h"

namespace kvaudit {

// One W element of `row` (a w.row(r) pointer) as f32.
inline float WeightAt(WeightType t, const uint8_t* row, int64_t i) {
  switch (t) {
    case WeightType::kF32: return reinterpret_cast<const float*>(row)[i];
    case WeightType::kBF16: return BF16ToF32(reinterpret_cast<const uint16_t*>(row)[i]);
    case WeightType::kF16: return F16ToF32(reinterpret_cast<const uint16_t*>(row)[i]);
    default: KV_CHECK_MSG(false, "WeightAt: block types are dequantized per block (ops/block_dequant.h)");
  }
  return 0;
}

#if defined(KVAUDIT_MATMUL_AVX512)  // ops/simd.h
// 16 consecutive weights from element i as f32.
template <WeightType T>
inline __m512 LoadW16(const uint8_t* row, int64_t i) {
  if constexpr (T == WeightType::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + i));
    if constexpr (T == WeightType::kBF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else return _mm512_cvtph_ps(h);
  }
}
// The first popcount(m) of them, zeros in the other lanes.
template <WeightType T>
inline __m512 LoadW16Masked(const uint8_t* row, int64_t i, __mmask16 m) {
  if constexpr (T == WeightType::kF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i);
    if constexpr (T == WeightType::kBF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else return _mm512_cvtph_ps(h);
  }
}
#endif

}  // namespace kvaudit

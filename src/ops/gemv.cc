// Decode-time kernels: gemv over W in its stored dtype, and the exact upcast of W rows to f32.
#include "ops/simd.h"  // first: see the note on GCC bug 105593

#include "base/half.h"
#include "ops/matmul.h"
#include "ops/weight_matrix.h"

namespace kvaudit {

namespace {
// One W element as f32 (exact for all three types).
inline float WeightAt(const WeightView& w, const uint8_t* row, int64_t i) {
  switch (w.type) {
    case WeightType::kF32: return reinterpret_cast<const float*>(row)[i];
    case WeightType::kBF16: return BF16ToF32(reinterpret_cast<const uint16_t*>(row)[i]);
    case WeightType::kF16: return F16ToF32(reinterpret_cast<const uint16_t*>(row)[i]);
  }
  return 0;
}
}  // namespace

void WeightRowsToF32Ref(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.row(r);
    for (int64_t i = 0; i < w.cols; ++i) out[(r - r0) * w.cols + i] = WeightAt(w, row, i);
  }
}

void GemvRef(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  for (int64_t r = row0; r < row1; ++r) {
    const uint8_t* row = w.row(r);
    double acc = 0;
    for (int64_t i = 0; i < w.cols; ++i) acc += static_cast<double>(WeightAt(w, row, i)) * x[i];
    y[r] = static_cast<float>(acc);
  }
}

void GemvRef(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y) {
  GemvRef(x, WeightView{w, WeightType::kF32, row1, in}, row0, row1, y);
}

void GemvRows(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y) {
  GemvRows(x, WeightView{w, WeightType::kF32, row1, in}, row0, row1, y);
}

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
namespace {
// Loads 16 consecutive weights (full, or the first popcount(m) of them) as f32.
template <WeightType T>
inline __m512 Load(const uint8_t* row, int64_t i) {
  if constexpr (T == WeightType::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + i));
    if constexpr (T == WeightType::kBF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else return _mm512_cvtph_ps(h);
  }
}
template <WeightType T>
inline __m512 LoadMasked(const uint8_t* row, int64_t i, __mmask16 m) {
  if constexpr (T == WeightType::kF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i);
    if constexpr (T == WeightType::kBF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    else return _mm512_cvtph_ps(h);
  }
}

// R rows' dot products with x, the same arithmetic for every R: 16-float chunks alternate between
// two accumulators per row (even/odd), the masked tail goes into the even one, and the two are
// added then reduced. R > 1 interleaves rows for memory-level parallelism and shares each x load;
// a row's sum does not depend on R, so thread splits never change results.
#ifndef KV_GEMV_PREFETCH
#define KV_GEMV_PREFETCH 1
#endif
constexpr bool kPrefetch = KV_GEMV_PREFETCH;

template <WeightType T, int R>
inline void DotRows(const float* x, const WeightView& w, int64_t r0, float* y) {
  const int64_t in = w.cols;
  const uint8_t* rows[R];
  __m512 a0[R], a1[R];
  for (int j = 0; j < R; ++j) {
    rows[j] = w.row(r0 + j);
    a0[j] = _mm512_setzero_ps();
    a1[j] = _mm512_setzero_ps();
  }
  // Prefetch the same columns of the next R rows (contiguous after these): the R interleaved
  // streams are too many for the hardware prefetcher to run far enough ahead on its own.
  const int64_t ahead = R * in * WeightTypeBytes(T);
  int64_t i = 0;
  for (; i + 32 <= in; i += 32) {
    const __m512 x0 = _mm512_loadu_ps(x + i), x1 = _mm512_loadu_ps(x + i + 16);
    for (int j = 0; j < R; ++j) {
      if constexpr (kPrefetch && R > 1) {
        const char* p = reinterpret_cast<const char*>(rows[j]) + ahead + i * WeightTypeBytes(T);
        _mm_prefetch(p, _MM_HINT_T0);
        if constexpr (T == WeightType::kF32) _mm_prefetch(p + 64, _MM_HINT_T0);
      }
      a0[j] = _mm512_fmadd_ps(Load<T>(rows[j], i), x0, a0[j]);
      a1[j] = _mm512_fmadd_ps(Load<T>(rows[j], i + 16), x1, a1[j]);
    }
  }
  if (i + 16 <= in) {
    const __m512 x0 = _mm512_loadu_ps(x + i);
    for (int j = 0; j < R; ++j) a0[j] = _mm512_fmadd_ps(Load<T>(rows[j], i), x0, a0[j]);
    i += 16;
  }
  if (i < in) {
    const __mmask16 m = static_cast<__mmask16>((1u << (in - i)) - 1);
    const __m512 x0 = _mm512_maskz_loadu_ps(m, x + i);
    for (int j = 0; j < R; ++j) a0[j] = _mm512_fmadd_ps(LoadMasked<T>(rows[j], i, m), x0, a0[j]);
  }
  for (int j = 0; j < R; ++j) y[j] = _mm512_reduce_add_ps(_mm512_add_ps(a0[j], a1[j]));
}

template <WeightType T>
void GemvRowsT(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  int64_t r = row0;
  for (; r + 4 <= row1; r += 4) DotRows<T, 4>(x, w, r, y + r);
  for (; r < row1; ++r) DotRows<T, 1>(x, w, r, y + r);
}

template <WeightType T>
void ToF32T(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  const int64_t in = w.cols;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.row(r);
    float* o = out + (r - r0) * in;
    int64_t i = 0;
    for (; i + 16 <= in; i += 16) _mm512_storeu_ps(o + i, Load<T>(row, i));
    if (i < in) {
      const __mmask16 m = static_cast<__mmask16>((1u << (in - i)) - 1);
      _mm512_mask_storeu_ps(o + i, m, LoadMasked<T>(row, i, m));
    }
  }
}
}  // namespace

void GemvRows(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  switch (w.type) {
    case WeightType::kF32: return GemvRowsT<WeightType::kF32>(x, w, row0, row1, y);
    case WeightType::kBF16: return GemvRowsT<WeightType::kBF16>(x, w, row0, row1, y);
    case WeightType::kF16: return GemvRowsT<WeightType::kF16>(x, w, row0, row1, y);
  }
}

void WeightRowsToF32(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  switch (w.type) {
    case WeightType::kF32: return ToF32T<WeightType::kF32>(w, r0, r1, out);
    case WeightType::kBF16: return ToF32T<WeightType::kBF16>(w, r0, r1, out);
    case WeightType::kF16: return ToF32T<WeightType::kF16>(w, r0, r1, out);
  }
}
#else
// Portable build: float accumulation in a fixed order (no reassociation without -ffast-math).
void GemvRows(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  for (int64_t r = row0; r < row1; ++r) {
    const uint8_t* row = w.row(r);
    float acc = 0;
    for (int64_t i = 0; i < w.cols; ++i) acc += WeightAt(w, row, i) * x[i];
    y[r] = acc;
  }
}
void WeightRowsToF32(const WeightView& w, int64_t r0, int64_t r1, float* out) { WeightRowsToF32Ref(w, r0, r1, out); }
#endif

}  // namespace kvaudit

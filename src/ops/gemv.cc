// Exact upcast of W rows to f32 (SIMD twin of WeightRowsToF32Ref), and the double-accumulation
// references GemvRef / MatMulRef that the canonical kernels (ops/matmul.cc) are tested against.
#ifndef KVAUDIT_ISA_PASS
#include "ops/weight_load.h"  // first: see the note on GCC bug 105593

#include "ops/matmul.h"

#include <vector>

#include "quant/dequantize.h"

namespace kvaudit {

namespace detail {
void BlockRowsToF32(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  for (int64_t r = r0; r < r1; ++r) DequantizeBlocks(w.type, w.row(r), out + (r - r0) * w.cols, w.cols);
}
}  // namespace detail

void WeightRowsToF32Ref(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  if (IsBlockType(w.type)) {
    for (int64_t r = r0; r < r1; ++r) DequantizeBlocksRef(w.type, w.row(r), out + (r - r0) * w.cols, w.cols);
    return;
  }
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.row(r);
    for (int64_t i = 0; i < w.cols; ++i) out[(r - r0) * w.cols + i] = WeightAt(w.type, row, i);
  }
}

void GemvRef(const float* x, const WeightView& w, int64_t row0, int64_t row1, float* y) {
  std::vector<float> row(static_cast<size_t>(w.cols));  // [cols] one row as f32
  for (int64_t r = row0; r < row1; ++r) {
    WeightRowsToF32Ref(w, r, r + 1, row.data());
    double acc = 0;
    for (int64_t i = 0; i < w.cols; ++i) acc += static_cast<double>(row[i]) * x[i];
    y[r] = static_cast<float>(acc);
  }
}

void GemvRef(const float* x, int64_t in, const float* w, int64_t row0, int64_t row1, float* y) {
  GemvRef(x, WeightView{w, QuantType::kF32, row1, in}, row0, row1, y);
}

void MatMulRef(const float* x, int64_t n, const WeightView& w, float* y) {
  for (int64_t t = 0; t < n; ++t) GemvRef(x + t * w.cols, w, 0, w.rows, y + t * w.rows);
}

void MatMulRef(const float* x, int64_t n, int64_t in, const float* w, int64_t out, float* y) {
  MatMulRef(x, n, WeightView{w, QuantType::kF32, out, in}, y);
}

}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "ops/gemv.cc"
#include "base/isa_passes.h"  // the upcast kernels below, once per kernel path

namespace kvaudit {
void WeightRowsToF32(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  KVAUDIT_DISPATCH(WeightRowsToF32, w, r0, r1, out);
}
}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
#include "ops/weight_load_simd.inl.h"

#if defined(KVAUDIT_MATMUL_AVX512)
namespace {
template <QuantType T>
void ToF32T(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  const int64_t in = w.cols;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.row(r);
    float* o = out + (r - r0) * in;
    int64_t i = 0;
    for (; i + 16 <= in; i += 16) _mm512_storeu_ps(o + i, LoadW16<T>(row, i));
    if (i < in) {
      const __mmask16 m = static_cast<__mmask16>((1u << (in - i)) - 1);
      _mm512_mask_storeu_ps(o + i, m, LoadW16Masked<T>(row, i, m));
    }
  }
}
}  // namespace

void WeightRowsToF32(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  if (IsBlockType(w.type)) return ::kvaudit::detail::BlockRowsToF32(w, r0, r1, out);
  switch (w.type) {
    case QuantType::kF32: return ToF32T<QuantType::kF32>(w, r0, r1, out);
    case QuantType::kBF16: return ToF32T<QuantType::kBF16>(w, r0, r1, out);
    case QuantType::kF16: return ToF32T<QuantType::kF16>(w, r0, r1, out);
    default: return WeightRowsToF32Ref(w, r0, r1, out);
  }
}
#elif defined(KVAUDIT_MATMUL_AVX2)
namespace {
template <QuantType T>
void ToF32T(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  const int64_t in = w.cols;
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.row(r);
    float* o = out + (r - r0) * in;
    int64_t i = 0;
    for (; i + 8 <= in; i += 8) _mm256_storeu_ps(o + i, LoadW8<T>(row, i));
    for (; i < in; ++i) o[i] = WeightAt(T, row, i);
  }
}
}  // namespace

void WeightRowsToF32(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  if (IsBlockType(w.type)) return ::kvaudit::detail::BlockRowsToF32(w, r0, r1, out);
  switch (w.type) {
    case QuantType::kBF16: return ToF32T<QuantType::kBF16>(w, r0, r1, out);
    case QuantType::kF16: return ToF32T<QuantType::kF16>(w, r0, r1, out);
    default: return WeightRowsToF32Ref(w, r0, r1, out);  // f32: a copy
  }
}
#else
void WeightRowsToF32(const WeightView& w, int64_t r0, int64_t r1, float* out) {
  if (IsBlockType(w.type)) return ::kvaudit::detail::BlockRowsToF32(w, r0, r1, out);
  WeightRowsToF32Ref(w, r0, r1, out);
}
#endif

#endif  // KVAUDIT_ISA_PASS

// ggml's row operations (elementwise.h). std::fma exactly where the AVX2 intrinsics fuse.
#include "ops/ggml/elementwise.h"

#include <cmath>
#include <cstdint>

#include "base/half.h"

namespace kvaudit::ggml {

void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double sum = 0.0;  // ggml_float
    for (int64_t i = 0; i < dim; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(dim));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * scale * w[i];  // rms_norm, then mul (fused or not)
  }
}

// One lane of the AVX2 ggml_v_expf: z = fma(x, 1/ln2, 1.5·2^23) rounds x/ln2 to the integer n in
// z's low mantissa bits; b = x − n·ln2 in two steps; 2^n built in the exponent bits (k); the
// polynomial j; result fma(j, k, k), or for |n| > 126 the scaled forms that avoid overflow.
float VExpF(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const uint32_t e = FloatToBits(z) << 23;
  const float k = BitsToFloat(e + FloatToBits(1.0f));
  const float u = b * b;
  const float j =
      std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
               0x1.ffffecp-1f * b);
  if (!(std::fabs(n) > 126)) return std::fma(j, k, k);
  const uint32_t g = n <= 0 ? 0x82000000u : 0u;
  const float s1 = BitsToFloat(g + 0x7f000000u);
  const float s2 = BitsToFloat(e - g);
  if (std::fabs(n) > 192) return s1 * s1;
  return std::fma(s2, j, s2) * s1;
}

void SwiGlu(const float* gate, const float* up, float* out, int64_t n) {
  const int64_t whole = n / 8 * 8;  // the 8-lane loop of ggml_vec_swiglu_f32
  for (int64_t i = 0; i < whole; ++i) out[i] = gate[i] / (1.0f + VExpF(0.0f - gate[i])) * up[i];
  for (int64_t i = whole; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];  // ggml_silu_f32
}

}  // namespace kvaudit::ggml

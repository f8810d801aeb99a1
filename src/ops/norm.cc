#include "ops/norm.h"

#include <cmath>

namespace kvaudit {

void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float variance = static_cast<float>(ss / static_cast<double>(dim));
    const float inv = 1.0f / std::sqrt(variance + eps);  // torch.rsqrt(variance + eps)
    for (int64_t i = 0; i < dim; ++i) yr[i] = w[i] * (xr[i] * inv);
  }
}

}  // namespace kvaudit

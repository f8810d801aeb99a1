// RMSNorm as transformers computes it (LlamaRMSNorm / Qwen3RMSNorm, modeling_llama.py):
//   variance = mean(x²) in f32;  y = weight * (x * rsqrt(variance + eps)).
// Scalar only: it is O(n·d) next to O(n·d²) matmuls, and the loops auto-vectorise. The sum of
// squares is accumulated in double so the result is within 1 ulp of the exact mean.
#pragma once

#include <cstdint>

namespace kvaudit {

// y[r, :] = RMSNorm(x[r, :]) · w for r in [0, rows); x, y [rows, dim] (may alias), w [dim].
void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps);

}  // namespace kvaudit

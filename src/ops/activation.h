// Elementwise kernels: exp, SwiGLU's silu(gate)·up, softmax. Each SIMD kernel has a scalar twin
// (…Scalar: the same operations one value at a time, bit for bit; ops_kernels_test.cc compares
// them) and a plain reference (…Ref: std::exp, for accuracy checks). On kernel paths without
// AVX-512 (base/isa.h) the entry points run the twins, so every path computes the same bits.
#pragma once

#include <cstdint>

#include "base/isa.h"

namespace kvaudit {

// y[i] = exp(x[i]); SIMD version accurate to ~2 ulp for x in [-87, 88], 0 below, +inf above.
void ExpRef(const float* x, float* y, int64_t n);
void ExpScalar(const float* x, float* y, int64_t n);
void Exp(const float* x, float* y, int64_t n);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g))  (torch.nn.functional.silu;
// transformers LlamaMLP: down_proj(act_fn(gate_proj(x)) * up_proj(x))).
void SiluMulRef(const float* gate, const float* up, float* out, int64_t n);
void SiluMulScalar(const float* gate, const float* up, float* out, int64_t n);
void SiluMul(const float* gate, const float* up, float* out, int64_t n);

// In-place softmax of x[n] (max-subtracted; -inf entries give 0).
void SoftmaxRef(float* x, int64_t n);
void Softmax(float* x, int64_t n);

// Returns max(x[0..n)) (-inf for n == 0). The twin agrees on every input without NaN, but for
// the sign of a zero maximum (immaterial: the maximum is only subtracted before exp).
float MaxOf(const float* x, int64_t n);
float MaxOfScalar(const float* x, int64_t n);
// x[i] = exp(x[i] - m) in place (Exp's arithmetic) and returns the sum of the results in the
// canonical 16-lane order and tree (ops/dot.h).
float ExpSubSum(float* x, int64_t n, float m);
float ExpSubSumScalar(float* x, int64_t n, float m);

// Each kernel path's own, for kernels of the same path in other files (no dispatch per call).
KVAUDIT_DECLARE_PER_PATH(void Exp(const float* x, float* y, int64_t n);
                         void SiluMul(const float* gate, const float* up, float* out, int64_t n);
                         float MaxOf(const float* x, int64_t n); float ExpSubSum(float* x, int64_t n, float m);)

}  // namespace kvaudit

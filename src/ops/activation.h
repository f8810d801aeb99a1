// Elementwise kernels: exp, SwiGLU's silu(gate)·up, softmax. Each SIMD kernel has a scalar
// reference (…Ref) next to it; ops_activation_test.cc compares them. Without AVX-512 the SIMD
// entry points fall back to the references.
#pragma once

#include <cstdint>

namespace kvaudit {

// y[i] = exp(x[i]); SIMD version accurate to ~2 ulp for x in [-87, 88], 0 below, +inf above.
void ExpRef(const float* x, float* y, int64_t n);
void Exp(const float* x, float* y, int64_t n);

// out[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g))  (torch.nn.functional.silu;
// transformers LlamaMLP: down_proj(act_fn(gate_proj(x)) * up_proj(x))).
void SiluMulRef(const float* gate, const float* up, float* out, int64_t n);
void SiluMul(const float* gate, const float* up, float* out, int64_t n);

// In-place softmax of x[n] (max-subtracted; -inf entries give 0).
void SoftmaxRef(float* x, int64_t n);
void Softmax(float* x, int64_t n);

// Returns max(x[0..n)) (-inf for n == 0).
float MaxOf(const float* x, int64_t n);
// x[i] = exp(x[i] - m) in place and returns the sum of the results (fixed summation order).
float ExpSubSum(float* x, int64_t n, float m);

}  // namespace kvaudit

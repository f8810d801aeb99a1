// llama.cpp CPU backend's row operations around the weight products, in scalar C++ with its
// roundings (engine=llama.cpp; x86 AVX2 build, ops/ggml/vec_dot.h kEmulatedBuild). Sources
// (ggml-org/llama.cpp @de3ff815): ggml/src/ggml-cpu/ops.cpp ggml_compute_forward_rms_norm_f32,
// ggml_rope_cache_init / rope_yarn / rotate_pairs (the FMAs GCC contracts there read from the
// object code of that build), ggml/src/ggml-cpu/vec.cpp ggml_vec_swiglu_f32 and vec.h's AVX2
// ggml_v_silu / ggml_v_expf.
#pragma once

#include <cstdint>

namespace kvaudit::ggml {

// y = x · (1/sqrtf(mean + eps)) · w per row of dim, where mean = Σ f32(x²) summed in double.
// (kvaudit's RmsNorm squares in double: the two differ in the last bits of the scale.)
void RmsNorm(const float* x, const float* w, float* y, int64_t rows, int64_t dim, float eps);

// ggml_v_expf (AVX2): exp by a degree-5 polynomial on the reduced argument, not libm's expf.
float VExpF(float x);
// out = silu(gate) · up with silu(g) = g / (1 + VExpF(−g)) for every whole 8-lane group, and
// g / (1 + expf(−g)) (libm) for the last n % 8 elements, as ggml_vec_swiglu_f32. A SIMD kernel of
// each kernel path (the AVX2 ggml_v_silu / ggml_v_expf themselves); the scalar twin gives the same
// bits.
void SwiGlu(const float* gate, const float* up, float* out, int64_t n);
void SwiGluScalar(const float* gate, const float* up, float* out, int64_t n);

}  // namespace kvaudit::ggml

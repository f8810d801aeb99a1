// The gated FFN units beside SwiGLU (ops/activation.h's SiluMul): Gemma's GeGLU and gpt-oss's
// clamped SwiGLU. Scalar only (libm's tanhf / expf, the same bits on every kernel path): their
// models' FFNs are small next to the matmuls around them.
#pragma once

#include <cstdint>

namespace kvaudit {

// out[i] = gelu_tanh(gate[i]) · up[i], gelu_tanh(x) = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
// in f32 (transformers' gelu_pytorch_tanh, Gemma's hidden_activation; llama.cpp's ggml_gelu is
// this function read from an f16 table on CPU, which kvaudit does not emulate: docs/models-gemma.md).
void GeluTanhMul(const float* gate, const float* up, float* out, int64_t n);

// out[i] = g·σ(1.702·g)·(u + 1) with g = min(gate[i], 7), u = clamp(up[i], −7, 7) (transformers
// GptOssExperts._apply_gate with alpha 1.702, limit 7; llama.cpp ggml swiglu_oai).
void ClampedSwigluMul(const float* gate, const float* up, float* out, int64_t n);

}  // namespace kvaudit

// vLLM's TurboQuant KV rows (`--kv-cache-dtype turboquant_k8v4 | turboquant_4bit_nc |
// turboquant_k3v4_nc | turboquant_3bit_nc`, vLLM >= 0.20). Read at vllm-project/vllm:
//   vllm/model_executor/layers/quantization/turboquant/config.py @1471680b (presets, sizes),
//   .../turboquant/centroids.py (solve_lloyd_max: the text of @06d0369d and of main's disk-cached copy),
//   vllm/v1/attention/ops/triton_turboquant_store.py @0135d081 (_tq_fused_store_mse,
//   _store_quantized_value), vllm/v1/attention/ops/triton_turboquant_decode.py @4ac35091 (readers),
//   vllm/v1/attention/backends/turboquant_attn.py @0135d081 (rotation: pure Hadamard since PR #40194).
// docs/research/vllm-turboquant.md has the full reading.
//
// turboquant_mse4 / turboquant_mse3 (the presets' keys; "MSE" is vLLM's name for the path):
//   norm = ‖x‖ (f32); x̂ = x / (norm + 1e-8); y = x̂ · H/√n (Sylvester Hadamard, no signs, every layer);
//   code_i = #{midpoints m : y_i >= m} (ties up, NaN 0) against the Lloyd-Max codebook of N(0, 1/n)
//   (TurboQuantCentroids; midpoints = f32 means of neighbouring f32 centroids);
//   row = { codes, LSB first (4-bit: element 2j low nibble of byte j; 3-bit: code i at bit 3i);
//           f16 norm (round to nearest even) }.
//   Read with norm correction (every MSE preset is `_nc`; the stored bytes do not depend on it):
//   c = codebook[code]; ĉ = c / sqrt(Σ c² + 1e-16); value = ĉ · norm — in the ROTATED basis. The
//   cache rotates the queries instead of un-rotating the keys, as vLLM's decode does
//   (RowRotatesItself): rot= does not apply to these formats.
// turboquant_uniform4 / turboquant_uniform3 (every preset's values): per row min and max,
//   scale = (max − min) / (2^b − 1) (at least 1e-8), code = clamp(floor((x − min)/scale + 0.5),
//   0, 2^b − 1) with the f32 scale and min; row = { codes (packed as above); f16 scale; f16 min };
//   read as fma(code, scale, min) with the f16-rounded pair (Triton contracts q·scale + zero).
// turboquant_k8v4's keys are plain fp8_e4m3 at scale 1.0 (Triton's saturating e4m3 cast on
//   SM >= 8.9; Ampere stores Triton's float8e4b15, a different byte format kvaudit does not model).
//
// Where the GPU differs (vLLM has no bit-level reference; its tests compare cosine similarity):
// vLLM rotates x̂ with a cuBLAS fp32 GEMM against H/√n and takes the norm with a torch reduction,
// both in an unspecified order; kvaudit uses the canonical dot (ops/dot.h) for Σx² and the
// fast Walsh–Hadamard butterflies scaled once (ops/hadamard.h). Triton's f32 divisions are
// div.full.f32 (within 2 ulp) and its sqrt approximate; kvaudit's are IEEE. A code whose value sits
// within rounding of a midpoint, or of a rounding boundary of the value codes, can differ by one.
// n must be a power of two from 16 to 1024 (vLLM builds H of the next power of two and fails
// otherwise). Bits per element at n = 128: keys 4.125 / 3.125, values 4.25 / 3.25.
#pragma once

#include <span>

#include "kv/formats/row_codec.h"

namespace kvaudit {

inline constexpr float kTurboQuantNormEps = 1e-8f;        // x / (‖x‖ + eps)
inline constexpr float kTurboQuantNcEps = 1e-16f;         // 1 / sqrt(Σc² + eps)
inline constexpr float kTurboQuantMinValueScale = 1e-8f;  // the value scale's floor
inline constexpr int kTurboQuantMinRow = 16, kTurboQuantMaxRow = 1024;

// vLLM's solve_lloyd_max(d, bits) (max_iter 200, tol 1e-10, trapezoid rule with 200 steps, all in
// double, a converged step not adopted) rounded to f32, ascending; bits 3 or 4, d a power of two in
// [16, 1024]. The 4-bit solve does not converge in 200 steps: the table is the 200th iterate, as
// vLLM's is.
std::span<const float> TurboQuantCentroids(int d, int bits);
// The decision boundaries the store kernel searches: f32 (c_i + c_{i+1}) / 2.
std::span<const float> TurboQuantMidpoints(int d, int bits);

const RowCodec& TurboQuantMse4Codec();  // "turboquant_mse4"
const RowCodec& TurboQuantMse4CodecRef();
const RowCodec& TurboQuantMse3Codec();  // "turboquant_mse3"
const RowCodec& TurboQuantMse3CodecRef();
const RowCodec& TurboQuantUniform4Codec();  // "turboquant_uniform4"
const RowCodec& TurboQuantUniform4CodecRef();
const RowCodec& TurboQuantUniform3Codec();  // "turboquant_uniform3"
const RowCodec& TurboQuantUniform3CodecRef();

}  // namespace kvaudit

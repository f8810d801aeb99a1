// NVFP4 KV rows (vLLM `--kv-cache-dtype nvfp4` / `nvfp4_4over6`, SGLang `nvfp4`, TensorRT-LLM
// KvCacheConfig(dtype="nvfp4")): E2M1 codes (quant/e2m1.h) in blocks of 16 along head_dim, each
// block with an fp8-e4m3 scale, the whole layer's K (or V) with one f32 global scale k_scale
// (CodecParams::scale: the checkpoint's k_scale/v_scale, 1.0 when it carries none).
// Value = e2m1(code) · e4m3(block scale) · k_scale.
//
// The quantizer is vLLM's store kernel, in its order of operations (cvt_warp_fp16_to_fp4 in
// csrc/libtorch_stable/quantization/fp4/nvfp4_utils.cuh and nvfp4_kv_cache_kernels.cu
// @d8eabdbf; 4over6: csrc/nvfp4_kv_cache_kernels.cu@5d11149b), per block of 16:
//   S = 1 / k_scale;  amax = max |x| (NaN left out, as __hmax does);
//   sf = e4m3_satfinite(S · (amax · (1/6)));        the stored block scale (RNE, saturating at 448)
//   os = sf != 0 ? 1 / (sf · (1/S)) : 0;             the encode multiplier
//   code_i = e2m1_rn_satfinite(x_i · os).
// 4over6 computes the same for amax·(1/4), reconstructs both blocks in x units
// (e2m1(code)·(1/os) − x, summed as Σ_pairs (e_2k² + e_2k+1²) in f32) and keeps max/4 only when
// its error is strictly smaller (ties keep max/6); a block with os = 0 has error Σ x².
// Where the GPU differs: the kernel's reciprocals are rcp.approx.ftz.f32 (1/6, 1/S, 1/(sf/S), and
// 4over6's 1/os), documented only to within 1 ulp; kvaudit takes the correctly rounded reciprocal
// (for 1/6: 0x3E2AAAAB), so a block whose scale product sits within an ulp of an e4m3 rounding
// boundary, or an element within an ulp of an e2m1 one, can take the neighbouring code there.
// nvcc may also contract 4over6's error sums into FMAs; kvaudit rounds each operation.
//
// kvaudit's row: n/16 blocks of { uint8 e4m3 scale; 8 bytes of codes, element 2k in the low
// nibble of byte k } = 4.5 bits per element. vLLM's page keeps each head's codes and its scales
// in two regions (and swizzles V's scales): the same bytes, elsewhere.
#pragma once

#include "kv/formats/row_codec.h"

namespace kvaudit {

inline constexpr int kNvfp4Block = 16;
inline constexpr int kNvfp4BlockBytes = 1 + kNvfp4Block / 2;
// The calibrated global scale: amax / (6 · 448), the convention of the calibrators that write
// nvfp4 k_scale/v_scale for vLLM (llm-compressor, auto-round: "amax/2688"), so that a block holding
// the tensor's amax gets the largest e4m3 scale. A zero amax gives FLT_EPSILON, as for fp8.
float Nvfp4CalibScale(float amax);

const RowCodec& Nvfp4Codec();             // "nvfp4"
const RowCodec& Nvfp4CodecRef();          // the same bytes with the scalar twins
const RowCodec& Nvfp4FourOverSixCodec();  // "nvfp4_4over6"
const RowCodec& Nvfp4FourOverSixCodecRef();

}  // namespace kvaudit

// vLLM's per-token-head KV rows (`--kv-cache-dtype int8_per_token_head` / `fp8_per_token_head`,
// Triton attention backend): one row per token and KV head, symmetric codes with one f32 scale,
// stored inline after the codes. Read at vllm-project/vllm@d8eabdbf,
// vllm/v1/attention/ops/triton_reshape_and_cache_flash.py (_reshape_cache_per_token_head):
//   scale = max(amax / QMAX, 1e-6)        QMAX = 127 (int8) or 448 (fp8 e4m3fn, CUDA); stored
//   v_i = x_i · (1 / scale)                 a reciprocal, then a multiply
//   int8: v ± 0.5 by sign, clamped to [−128, 127], truncated by the store: round half away from zero
//         (since vLLM PR #45361, 9c450b10, 2026-06-22; earlier builds truncated toward zero);
//   fp8:  clamped to ±448, then e4m3 round to nearest even.
//   dequantize: code · scale in f32.
// The engine ignores the checkpoint's k_scale/v_scale for these modes (they are forced to 1.0).
// Where the GPU differs: Triton lowers the two divisions to div.full.f32 (within 2 ulp, not IEEE)
// and may contract v·inv ± 0.5 into an FMA; on sm_89 its fp32 -> e4m3 store rounds twice (through
// fp16). kvaudit divides exactly and rounds each operation: a scale can differ in its last bit, and
// a code that sits on a rounding boundary can differ by one. NaN (unspecified in Triton's max and
// clamp): left out of amax, its code the clamp's lower bound (−128, or −448 for fp8).
// kvaudit's row: { f32 scale; codes[n] } = 8 + 32/n bits per element (8.25 at head_dim 128);
// vLLM keeps the scale after the codes: the same bytes, elsewhere.
#pragma once

#include "kv/formats/row_codec.h"

namespace kvaudit {

inline constexpr float kPerTokenHeadMinScale = 1e-6f;

const RowCodec& Int8PerTokenHeadCodec();  // "int8_per_token_head"
const RowCodec& Int8PerTokenHeadCodecRef();
const RowCodec& Fp8PerTokenHeadCodec();  // "fp8_per_token_head"
const RowCodec& Fp8PerTokenHeadCodecRef();

}  // namespace kvaudit

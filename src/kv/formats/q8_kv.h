// ik_llama.cpp's q8_KV cache type (`-ctk q8_KV`): one f32 scale per row, the row being one token's
// key of one KV head (head_dim elements), with 8-bit codes and their sum. Read at
// ikawrakow/ik_llama.cpp@8337e4cd (introduced in 1140b456):
//   row layout (ggml/src/iqk/fa/iqk_fa_templates.h block_q8_KV):  { f32 d; int32 s; int8 q[n] }
//   quantizer (ggml/src/iqk/iqk_quantize.cpp iqk_quantize_row_q8_KV, also its _ref):
//     amax = max |x|; an all-zero row stores d = 0, s = 0, q = 0;
//     d = amax / 127 (an f32 division, stored); id = 1 / d (another one: not 127 / amax);
//     q_i = round-half-even(id · x_i) (|q| <= 127: id·amax is within 3e-5 of 127); s = Σ q_i.
//   dequantizer: d · q_i in f32 (dequantize_row_q8_KV; the x86 flash-attention V loader alike).
// NaN and inf, where ik_llama.cpp's result depends on the ISA path (and for NaN in amax on the
// element's SIMD lane): kvaudit follows the x86 AVX2 path for codes (cvtps_epi32 of NaN or ±inf is
// INT_MIN, saturated to -128 by the packs) and leaves NaN out of amax as the scalar std::max does.
// An infinite amax gives d = inf, id = 0 and 0 · inf = NaN for the infinite elements (-128), 0 for
// the rest; a row so small that d is subnormal has id = inf (every nonzero code -128, zeros NaN:
// -128). s is the sum of the stored codes (the AVX2 path sums the 32-bit conversions, which
// differ from them only in those rows).
// n must be a multiple of 32 (ik_llama.cpp's row size check). Bits per element: 8 + 64 / n.
#pragma once

#include "kv/formats/row_codec.h"

namespace kvaudit {

inline constexpr int kQ8KvHeaderBytes = 8;  // f32 d, int32 s
inline constexpr int kQ8KvRowMultiple = 32;

const RowCodec& Q8KvCodec();     // "q8_KV", the active kernel path's dot/axpy
const RowCodec& Q8KvCodecRef();  // the same bytes with the scalar twins

}  // namespace kvaudit

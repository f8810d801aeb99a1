// Block-diagonal orthonormal Walsh–Hadamard rotation of KV rows, the transform of llama.cpp's
// automatic rotation of quantized caches (PR #21038; docs/research/llamacpp-kv-notes.md §3) and of
// QuaRot-style rotations: each run of `block` consecutive elements of a row is multiplied by the
// Sylvester Hadamard matrix H_b / √b (entries ±1/√b, no random signs, no permutation). H_b/√b is
// symmetric and orthogonal, so the transform is its own inverse: rotate K and Q with it and Q·K is
// unchanged; rotate V with it and rotate the attention output back with the same call.
#pragma once

#include <cstdint>

namespace kvaudit {

// Largest power of two dividing n (n > 0); e.g. 192 -> 64, 128 -> 128, 80 -> 16.
inline int LargestPow2Divisor(int n) { return n & -n; }

// x: [n_rows, row_len], rotated in place. block: a power of two dividing row_len (1 = identity).
// Fast Walsh–Hadamard butterflies (a, b) -> (a + b, a − b) with half-widths 1, 2, 4, …, then × 1/√block.
// AVX-512 for block >= 16 on the AVX-512 kernel path (base/isa.h); it performs the same additions
// in the same order as the scalar twin, so both give bit-identical results.
void HadamardRows(float* x, int64_t n_rows, int64_t row_len, int block);
void HadamardRowsRef(float* x, int64_t n_rows, int64_t row_len, int block);  // scalar twin

// llama.cpp's rotation block sizes (build_input_k_rot / build_input_v_rot, notes §3):
//   K: the largest power of two dividing head_dim (64 -> 64, 128 -> 128, 192 -> 64, 576 -> 64);
//   V: always 64.
// llama.cpp rotates only when head_dim % 64 == 0 (and the cache type is quantized); for other
// head_dims this returns {0, 0}: no rotation.
struct RotationBlocks {
  int k, v;
};
RotationBlocks LlamaCppRotationBlocks(int head_dim);

}  // namespace kvaudit

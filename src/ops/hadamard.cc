// Block-diagonal Walsh–Hadamard rotation: see ops/hadamard.h. The AVX-512 kernel is
// compiled once per kernel path (base/isa_passes.h); the AVX2 and portable paths run the scalar
// twin, as the -march=x86-64-v3 build did.
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: see the note on GCC bug 105593

#include "ops/hadamard.h"

#include <cassert>
#include <cmath>

namespace kvaudit {
namespace {

// Unnormalised butterfly stages h = 1, 2, 4, … < block over one block.
void FwhtScalar(float* v, int block) {
  for (int h = 1; h < block; h *= 2) {
    for (int i = 0; i < block; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float a = v[j], b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
    }
  }
}

inline float Norm(int block) { return static_cast<float>(1.0 / std::sqrt(static_cast<double>(block))); }

}  // namespace

void HadamardRowsRef(float* x, int64_t n_rows, int64_t row_len, int block) {
  assert(block > 0 && (block & (block - 1)) == 0 && row_len % block == 0);
  const float nrm = Norm(block);
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t b = 0; b < row_len; b += block) {
      float* v = x + r * row_len + b;  // [block]
      FwhtScalar(v, block);
      for (int i = 0; i < block; ++i) v[i] *= nrm;
    }
  }
}

RotationBlocks LlamaCppRotationBlocks(int head_dim) {
  if (head_dim <= 0 || head_dim % 64 != 0) return {0, 0};  // llama.cpp's gate: n_embd_head % 64 == 0
  return {LargestPow2Divisor(head_dim), 64};
}

}  // namespace kvaudit

#define KVAUDIT_ISA_SELF "ops/hadamard.cc"
#include "base/isa_passes.h"  // the kernels below, once per kernel path

namespace kvaudit {
void HadamardRows(float* x, int64_t n_rows, int64_t row_len, int block) {
  KVAUDIT_DISPATCH(HadamardRows, x, n_rows, row_len, block);
}
}  // namespace kvaudit

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)

#if defined(KVAUDIT_ISA_AVX512)
namespace {
// Butterfly with half-width h < 16 inside one 16-lane register: partner = the lane h away (swap),
// lanes with bit h clear get x + partner (= a + b), lanes with bit h set get partner − x (= a − b).
// fmadd(x, ±1, partner) rounds once, exactly as the scalar a + b / a − b do.
inline __m512 InRegisterStages(__m512 x) {
  const __m512 s1 = _mm512_setr_ps(1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1);
  const __m512 s2 = _mm512_setr_ps(1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1);
  const __m512 s4 = _mm512_setr_ps(1, 1, 1, 1, -1, -1, -1, -1, 1, 1, 1, 1, -1, -1, -1, -1);
  const __m512 s8 = _mm512_setr_ps(1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1);
  x = _mm512_fmadd_ps(x, s1, _mm512_permute_ps(x, 0xB1));        // lanes (1,0,3,2) within 128 bits
  x = _mm512_fmadd_ps(x, s2, _mm512_permute_ps(x, 0x4E));        // lanes (2,3,0,1) within 128 bits
  x = _mm512_fmadd_ps(x, s4, _mm512_shuffle_f32x4(x, x, 0xB1));  // 128-bit blocks (1,0,3,2)
  x = _mm512_fmadd_ps(x, s8, _mm512_shuffle_f32x4(x, x, 0x4E));  // 128-bit blocks (2,3,0,1)
  return x;
}

void FwhtSimd(float* v, int block) {  // block >= 16
  // The scalar order is stage by stage over the whole block; stages h < 16 touch only one 16-lane
  // chunk each, so doing all four per chunk first yields the same values.
  for (int i = 0; i < block; i += 16) _mm512_storeu_ps(v + i, InRegisterStages(_mm512_loadu_ps(v + i)));
  for (int h = 16; h < block; h *= 2) {
    for (int i = 0; i < block; i += 2 * h) {
      for (int j = i; j < i + h; j += 16) {
        const __m512 a = _mm512_loadu_ps(v + j), b = _mm512_loadu_ps(v + j + h);
        _mm512_storeu_ps(v + j, _mm512_add_ps(a, b));
        _mm512_storeu_ps(v + j + h, _mm512_sub_ps(a, b));
      }
    }
  }
  const __m512 nrm = _mm512_set1_ps(Norm(block));
  for (int i = 0; i < block; i += 16) _mm512_storeu_ps(v + i, _mm512_mul_ps(_mm512_loadu_ps(v + i), nrm));
}
}  // namespace
#endif

void HadamardRows(float* x, int64_t n_rows, int64_t row_len, int block) {
#if defined(KVAUDIT_ISA_AVX512)
  if (block >= 16) {
    assert((block & (block - 1)) == 0 && row_len % block == 0);
    for (int64_t r = 0; r < n_rows; ++r) {
      for (int64_t b = 0; b < row_len; b += block) FwhtSimd(x + r * row_len + b, block);
    }
    return;
  }
#endif
  HadamardRowsRef(x, n_rows, row_len, block);
}

#endif  // KVAUDIT_ISA_PASS

// The one place that includes <immintrin.h>, and which kernels the active path runs.
// GCC 12's AVX-512 intrinsics (_mm512_max_ps, _mm512_roundscale_ps, _mm512_scalef_ps, the
// _mm512_reduce_* helpers) are written on top of _mm512_undefined_ps() and trip
// -Wmaybe-uninitialized once inlined (GCC bug 105593, fixed in 13); the warning is silenced for the
// header's own lines only, and only for GCC (clang has no -Wmaybe-uninitialized, and -Werror turns
// its unknown-warning diagnostic into an error). Include this before other headers.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>  // AVX-512 kernels, and the AVX2 ones of kv/llamacpp (llama.cpp's own ISA paths)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

#include "base/isa.h"

namespace kvaudit {

// Which kernels the active path (base/isa.h) runs. The SIMD kernels are compiled in every binary,
// once per path (base/isa_passes.h); tests compare each path with the scalar twins, and the
// committed bit hashes (tests/unit/kv_cross_build_bits_test.cc) pin the bits every path gives.
// AVX-512 twins of the scalar kernels (row codecs, exp, DotF32, attention, Hadamard, KIVI, matmul):
inline bool Avx512Kernels() { return ActiveIsa() == Isa::kAvx512; }
// The AVX2 matmul / gemv kernels (ops/matmul_avx2.cc) and block dequantizers:
inline bool Avx2MatmulKernels() { return ActiveIsa() == Isa::kAvx2; }
// The AVX2-or-better score kernels of the llama.cpp emulation (kv/llamacpp: llama.cpp's own ISA paths):
inline bool Avx2LlamaCppKernels() { return ActiveIsa() >= Isa::kAvx2; }

}  // namespace kvaudit

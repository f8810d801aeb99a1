// The one place that includes <immintrin.h>, and which kernel sets this build compiled.
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

// The 16-bit weight loads of the matmul kernels need BW and VL on top of F (ops/weight_load.h);
// without them, AVX2 + FMA + F16C run the same order on 8-lane registers (ops/matmul_avx2.cc).
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define KVAUDIT_MATMUL_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define KVAUDIT_MATMUL_AVX2 1
#endif

namespace kvaudit {

// Whether the AVX-512 twins of the scalar kernels are compiled (row codecs, exp, DotF32, attention,
// Hadamard, KIVI). Without them every SIMD entry point IS its scalar twin, so tests compare the two
// only where both exist; the committed bit hashes (tests/unit/kv_cross_build_bits_test.cc) pin
// the bits of whichever path a build runs.
#if defined(__AVX512F__)
inline constexpr bool kAvx512Kernels = true;
#else
inline constexpr bool kAvx512Kernels = false;
#endif
// The same for the matmul / gemv kernels and the weight upcast (ops/matmul.cc, ops/gemv.cc), and
// whether the matmul has the AVX2 kernel instead (ops/matmul_avx2.cc).
#if defined(KVAUDIT_MATMUL_AVX512)
inline constexpr bool kAvx512MatmulKernels = true;
#else
inline constexpr bool kAvx512MatmulKernels = false;
#endif
#if defined(KVAUDIT_MATMUL_AVX2)
inline constexpr bool kAvx2MatmulKernels = true;
#else
inline constexpr bool kAvx2MatmulKernels = false;
#endif
// The AVX2 score kernel of the llama.cpp emulation (kv/llamacpp/flash_attn.cc: llama.cpp's AVX2 branch).
#if defined(__AVX2__) && defined(__FMA__)
inline constexpr bool kAvx2LlamaCppKernels = true;
#else
inline constexpr bool kAvx2LlamaCppKernels = false;
#endif

}  // namespace kvaudit

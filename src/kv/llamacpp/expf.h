// expf over a batch, bitwise what the C library's expf returns for each element: llama.cpp's CPU
// flash attention calls libm expf once per key (ggml-cpu/ops.cpp _one_chunk: expf(Mold - M),
// expf(s - M)), and the emulation keeps its arithmetic (kv/llamacpp/attention.h).
//
// The SIMD kernel is glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, glibc ≥ 2.27) as the x86-64
// ifunc runs it on FMA/AVX2 machines (__expf_fma: the same C compiled with -mfma, whose
// contractions we copied from its disassembly, glibc 2.36), on 8 doubles per AVX-512 register or
// 4 per AVX2 register: z = x·32/ln2, k = round(z) via the 0x1.8p52 shift (kd = fma(InvLn2N, x,
// shift)), r = fma(InvLn2N, x, −(kd − shift)), s = 2^(k/32) from the 32-entry table, y = s ·
// (fma(fma(C0, r, C1), r², fma(C2, r, 1))), rounded to float. Inputs outside its fast path
// (|x| ≥ 88, ±inf, NaN) go to the libm call itself. Because another libm (or glibc's non-FMA
// variant) could round differently, the kernel checks itself against std::exp on a fixed input
// set once per process and falls back to the scalar twin when any bit differs;
// bench/expf_exhaustive.cc compares the two over all 2^32 floats.
#pragma once

namespace kvaudit::llamacpp {

// y[i] = std::exp(x[i]) for i < n, bitwise; x and y must not overlap.
void ExpBatch(const float* x, float* y, int n);
// The scalar twin: the libm call per element.
void ExpBatchScalar(const float* x, float* y, int n);
// Whether ExpBatch runs the SIMD kernel on the active path (base/isa.h): the path has one, and its
// self-check passed (each path checks its own kernel, once).
bool ExpBatchIsSimd();
// The active path's SIMD kernel alone, without the self-check's fallback (for tests and
// bench/expf_exhaustive); the scalar twin on the portable path.
void ExpBatchSimdUnchecked(const float* x, float* y, int n);

}  // namespace kvaudit::llamacpp

// ExpBatch of each kernel path (kv/llamacpp/expf.cc, base/isa_passes.h), self-check included: the
// kernels of a path in other files (kv/llamacpp/fa_tile.cc) call their own path's directly.
namespace kvaudit::isa_avx512::llamacpp {
void ExpBatch(const float* x, float* y, int n);
}
namespace kvaudit::isa_avx2::llamacpp {
void ExpBatch(const float* x, float* y, int n);
}
namespace kvaudit::isa_portable::llamacpp {
void ExpBatch(const float* x, float* y, int n);
}

// Compiles the including file's kernel section once per kernel path (base/isa.h), each copy in its
// own namespace and for its own instruction set, in one translation unit (the scheme of Highway's
// foreach_target.h, written out for our three paths):
//
//   // a kernel file, e.g. src/ops/<name>.cc
//   #ifndef KVAUDIT_ISA_PASS
//   #include <...>                     // every header, std and ours, before the passes
//   #define KVAUDIT_ISA_SELF "ops/foo.cc"
//   #include "base/isa_passes.h"       // the #else section below, three times
//   namespace kvaudit { float Foo(const float* x) { KVAUDIT_DISPATCH(Foo, x); } }
//   #else                              // one pass: inside namespace kvaudit::isa_<path>
//   #include "ops/foo_simd.inl.h"      // per-pass helpers (no include guard, no includes)
//   float Foo(const float* x) {
//   #if defined(KVAUDIT_ISA_AVX512) ... #elif defined(KVAUDIT_ISA_AVX2) ... #else ... #endif
//   }
//   #endif
//
// Why a target pragma and not a per-file -march: everything defined before the pragma (the std
// library's and our headers' inline functions and templates) is compiled for the baseline, so no
// AVX-512 copy of, say, std::vector<float>::resize can win the linker's pick of COMDAT copies and
// run on an AVX2 CPU. Only functions defined inside a pass get its instruction set.
// GCC's C++ front end does not update __AVX512F__ & co. under `#pragma GCC target` (it lexes the
// whole file first), hence our own macros:
//   KVAUDIT_ISA_AVX512   AVX-512 F/BW/VL/DQ/VNNI (and everything below)
//   KVAUDIT_ISA_AVX2     AVX2 + FMA + F16C (also defined in the AVX-512 pass)
//   KVAUDIT_MATMUL_AVX512 / KVAUDIT_MATMUL_AVX2   which matmul kernel family the pass compiles
//   KVAUDIT_ISA_NS       the pass's namespace name
// (no include guard: one use per translation unit)
#if !defined(KVAUDIT_ISA_SELF)
#error "define KVAUDIT_ISA_SELF (this file's path under src/) before including base/isa_passes.h"
#endif
#if defined(KVAUDIT_ISA_PASS)
#error "base/isa_passes.h included from inside a pass"
#endif
#define KVAUDIT_ISA_PASS 1

// clang warns (an error under -Werror) when a pass defines no function the target attribute applies
// to (a file whose AVX2 pass only aliases the scalar twins); that is expected here.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wpragma-clang-attribute"
#endif

// ---- AVX-512 ----
#define KVAUDIT_ISA_NS isa_avx512
#define KVAUDIT_ISA_AVX512 1
#define KVAUDIT_ISA_AVX2 1
#define KVAUDIT_MATMUL_AVX512 1
#if defined(__clang__)
#pragma clang attribute push(                                                                               \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c,bmi,bmi2,popcnt"))), \
    apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c,bmi,bmi2,popcnt")
#endif
namespace kvaudit::isa_avx512 {
#include KVAUDIT_ISA_SELF
}  // namespace kvaudit::isa_avx512
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#undef KVAUDIT_ISA_NS
#undef KVAUDIT_ISA_AVX512
#undef KVAUDIT_ISA_AVX2
#undef KVAUDIT_MATMUL_AVX512

// ---- AVX2 + FMA + F16C ----
#define KVAUDIT_ISA_NS isa_avx2
#define KVAUDIT_ISA_AVX2 1
#define KVAUDIT_MATMUL_AVX2 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,bmi,bmi2,popcnt"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,popcnt")
#endif
namespace kvaudit::isa_avx2 {
#include KVAUDIT_ISA_SELF
}  // namespace kvaudit::isa_avx2
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#undef KVAUDIT_ISA_NS
#undef KVAUDIT_ISA_AVX2
#undef KVAUDIT_MATMUL_AVX2

// ---- portable: the baseline the rest of the binary is compiled for ----
#define KVAUDIT_ISA_NS isa_portable
namespace kvaudit::isa_portable {
#include KVAUDIT_ISA_SELF
}  // namespace kvaudit::isa_portable
#undef KVAUDIT_ISA_NS

#if defined(__clang__)
#pragma clang diagnostic pop
#endif
#undef KVAUDIT_ISA_PASS

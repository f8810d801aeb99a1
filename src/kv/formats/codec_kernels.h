// The attention kernels of every row codec (kv/formats/row_codec.h), written once over a per-format
// block decoder. A format supplies only how packed bytes become the f32 values its dequantize
// produces; dot, axpy and their multi-row / multi-query forms come from here, so:
//   dot(row, q)  = the canonical dot (ops/dot.h) of q with dequantize(row), bit for bit;
//   axpy(row, w) : acc_i = fma(dequantize(row)_i, w, acc_i) for every i;
//   dot_rows     = dot for each (row, query) pair, bit-identical to dot;
//   axpy_rows    = axpy of each row in ascending row order for each weight row, bit-identical.
// Bit identity between the single and the batched forms is what lets attention read the G query
// heads of a KV head and runs of packed rows in one call (decode each block once, keep the
// accumulators in registers, reduce 16 dots at once) while prefill and decode still agree bitwise
// (kv/attention/chunked_attention.h). The scalar twins (RowKernelsRef) dequantize and run
// DotCanonicalScalar / std::fma; tests/unit/kv_codec_kernels_test.cc compares them bit for bit on
// every kernel path.
//
// This header holds the scalar parts (compiled once, for the baseline). The AVX-512 kernels
// (RowKernels over a decoder), the AVX2 ones (RowKernelsAvx2 over an 8-lane decoder,
// codec_kernels_avx2.inl.h) and KVAUDIT_ROW_KERNELS are per kernel path (base/isa_passes.h):
// kv/formats/codec_kernels_simd.inl.h, which each format's pass section includes along with its
// decoders. The portable path runs the scalar twins.
//
// Decoder concept (the AVX-512 pass; the AVX2 one is the same on __m256, kUnit / 8 of them):
//   static constexpr int kUnit;   // elements per Decode call: 16 or 32 (one llama.cpp block)
//   static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m512* v);
//       // v[kUnit / 16] = dequantize(row)[u·kUnit, (u+1)·kUnit), exactly
//   static bool Supports(int64_t n, const CodecParams& p);   // optional: false -> fallback path
// Rows whose length is not a multiple of kUnit (float formats only: block formats enforce it), or
// that the decoder does not support (int groups not a multiple of 16), take a dequantize-then-
// DotF32 path with the same bits.
#pragma once

#include "base/simd.h"  // first: see the note on GCC bug 105593

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "kv/formats/row_codec.h"
#include "ops/dot.h"

namespace kvaudit {

using DequantizeFn = void (*)(const uint8_t* src, float* y, int64_t n, const CodecParams& p);

// Longest row the scalar twins (and the AVX-512 kernels' fallback) dequantize into their stack
// buffer. Every store caps head_dim at this (kv/store/row_store.h kMaxRowStoreHeadDim,
// kv/store/kivi_kernels.h kKiviMaxHeadDim); the float formats' twins read their values in place
// and have no bound (kv/formats/float_row_kernels.h: the f32 cache does not cap head_dim).
inline constexpr int kCodecMaxRowElems = 1024;

// The scalar twins (RowKernelsRefRows, RowKernelsRef): defined here for the reference codecs and
// the portable path, and again inside the other kernel passes (codec_kernels_simd.inl.h), where the
// same source compiles std::fma to the FMA instruction instead of a libm call.
#include "kv/formats/codec_kernels_ref.inl.h"

// A RowCodec whose dot/axpy/dot_rows/axpy_rows are Kernels' (RowKernels<...> or RowKernelsRef<...>).
template <class Kernels>
RowCodec MakeRowCodec(std::string_view name, int block_elems, uint64_t (*row_bytes)(int64_t, const CodecParams&),
                      double (*bits_per_element)(int64_t, const CodecParams&),
                      void (*quantize)(const float*, uint8_t*, int64_t, const CodecParams&), DequantizeFn dequantize) {
  return RowCodec{name,       block_elems,  row_bytes,     bits_per_element, quantize,
                  dequantize, Kernels::Dot, Kernels::Axpy, Kernels::DotRows, Kernels::AxpyRows};
}

}  // namespace kvaudit

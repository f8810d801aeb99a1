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
// (issue 3, kv/attention/chunked_attention.h). The scalar twins (RowKernelsRef) dequantize and run
// DotCanonicalScalar / std::fma; tests/unit/kv_codec_kernels_test.cc compares them bit for bit on
// every kernel path.
//
// This header holds the scalar parts (compiled once, for the baseline). The AVX-512 kernels
// (RowKernels over a decoder) and KVAUDIT_ROW_KERNELS are per kernel path (base/isa_passes.h):
// kv/formats/codec_kernels_simd.inl.h, which each format's pass section includes along with its
// decoder. The AVX2 and portable paths run the scalar twins (as the x86-64-v3 build did).
//
// Decoder concept (the AVX-512 pass):
//   static constexpr int kUnit;   // elements per Decode call: 16 or 32 (one llama.cpp block)
//   static void Decode(const uint8_t* row, int64_t u, const CodecParams& p, __m512* v);
//       // v[kUnit / 16] = dequantize(row)[u·kUnit, (u+1)·kUnit), exactly
//   static bool Supports(int64_t n, const CodecParams& p);   // optional: false -> fallback path
// Rows whose length is not a multiple of kUnit (float formats only: block formats enforce it), or
// that the decoder does not support (int groups not a multiple of 16), take a dequantize-then-
// DotF32 path with the same bits.
#pragma once

#include "ops/simd.h"  // first: see the note on GCC bug 105593

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

// The multi-row / multi-query forms of a scalar twin: its one-row Dot / Axpy, rows in ascending
// order for each weight row (the sequence the batched kernels must reproduce bit for bit). The
// float formats' twins use these as they are (kv/formats/float_row_kernels.h).
template <class One>
struct RowKernelsRefRows {
  static void DotRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int n_q,
                      int64_t n, float* out, int64_t out_stride, const CodecParams& p) {
    for (int j = 0; j < n_q; ++j) {
      for (int r = 0; r < n_rows; ++r) out[j * out_stride + r] = One::Dot(rows + r * row_bytes, q + j * q_stride, n, p);
    }
  }
  static void AxpyRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride, int n_w,
                       float* acc, int64_t acc_stride, int64_t n, const CodecParams& p) {
    for (int r = 0; r < n_rows; ++r) {
      for (int j = 0; j < n_w; ++j) One::Axpy(rows + r * row_bytes, w[j * w_stride + r], acc + j * acc_stride, n, p);
    }
  }
};

// The scalar twins: dequantize (into a stack row: no allocation per call), then the canonical
// order written out (ops/dot.h).
template <DequantizeFn Dequantize>
struct RowKernelsRef {
  static float Dot(const uint8_t* src, const float* q, int64_t n, const CodecParams& p) {
    KV_CHECK_MSG(n <= kCodecMaxRowElems, "row too long for the codec kernels");
    float y[kCodecMaxRowElems];  // [n]
    Dequantize(src, y, n, p);
    return DotCanonicalScalar(q, static_cast<const float*>(y), n);
  }
  static void Axpy(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams& p) {
    KV_CHECK_MSG(n <= kCodecMaxRowElems, "row too long for the codec kernels");
    float y[kCodecMaxRowElems];  // [n]
    Dequantize(src, y, n, p);
    for (int64_t i = 0; i < n; ++i) acc[i] = std::fma(y[i], w, acc[i]);
  }
  // The multi-row forms dequantize each row once for all queries / weight rows; every output must
  // see Dot's / Axpy's operations (rows in ascending order), the sequence RowKernelsRefRows spells
  // out (tests/unit/kv_codec_kernels_test.cc compares them with Dot / Axpy).
  static void DotRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int n_q,
                      int64_t n, float* out, int64_t out_stride, const CodecParams& p) {
    KV_CHECK_MSG(n <= kCodecMaxRowElems, "row too long for the codec kernels");
    float y[kCodecMaxRowElems];  // [n] row r
    const float* yr = y;
    for (int r = 0; r < n_rows; ++r) {
      Dequantize(rows + r * row_bytes, y, n, p);
      for (int j = 0; j < n_q; ++j) out[j * out_stride + r] = DotCanonicalScalar(q + j * q_stride, yr, n);
    }
  }
  static void AxpyRows(const uint8_t* rows, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride, int n_w,
                       float* acc, int64_t acc_stride, int64_t n, const CodecParams& p) {
    KV_CHECK_MSG(n <= kCodecMaxRowElems, "row too long for the codec kernels");
    float y[kCodecMaxRowElems];  // [n] row r
    for (int r = 0; r < n_rows; ++r) {
      Dequantize(rows + r * row_bytes, y, n, p);
      for (int j = 0; j < n_w; ++j) {
        float* a = acc + j * acc_stride;
        const float wt = w[j * w_stride + r];
        for (int64_t i = 0; i < n; ++i) a[i] = std::fma(y[i], wt, a[i]);
      }
    }
  }
};

// A RowCodec whose dot/axpy/dot_rows/axpy_rows are Kernels' (RowKernels<...> or RowKernelsRef<...>).
template <class Kernels>
RowCodec MakeRowCodec(std::string_view name, int block_elems, uint64_t (*row_bytes)(int64_t, const CodecParams&),
                      double (*bits_per_element)(int64_t, const CodecParams&),
                      void (*quantize)(const float*, uint8_t*, int64_t, const CodecParams&), DequantizeFn dequantize) {
  return RowCodec{name,       block_elems, row_bytes,    bits_per_element,  quantize,
                  dequantize, Kernels::Dot, Kernels::Axpy, Kernels::DotRows, Kernels::AxpyRows};
}

}  // namespace kvaudit

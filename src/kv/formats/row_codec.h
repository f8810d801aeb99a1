// Row codecs: how one cached row (head_dim values of one token and one KV head) is packed.
// Each format is one .cc file defining its codec, one row of the table in kv/formats/format_table.cc and
// one test (ggml's type-traits design). Stores (kv/*_store.*) decide WHICH rows get packed and
// when (sinks, recent windows, KIVI groups); codecs only know how.
//
// Every codec's dot/axpy comes from kv/formats/codec_kernels.h over the format's block decoder: the dot is
// the canonical dot (ops/dot.h) of q with the dequantized row, the axpy one fma per element; the
// AVX-512 kernels and their scalar twins agree bit for bit (tests/unit/kv_codec_kernels_test.cc).
#pragma once

#include <cstdint>
#include <string_view>

namespace kvaudit {

// Per-row parameters that are not stored inside the row.
struct CodecParams {
  float scale = 1.0f;  // fp8 `unit`/`calib`: x is stored as fp8(x / scale) (vLLM's k_scale/v_scale)
  int group = 32;      // int8/int4: elements per (scale, zero) group along the row
};

struct RowCodec {
  std::string_view name;  // spec name: "q4_0", "fp8_e4m3", ...
  int block_elems;        // a row length must be a multiple of this (0 = uses params.group)
  // Packed bytes of an n-element row.
  uint64_t (*row_bytes)(int64_t n, const CodecParams& p);
  // Exact storage bits per element including scales/zeros/metadata (for `kvaudit formats`).
  double (*bits_per_element)(int64_t n, const CodecParams& p);
  void (*quantize)(const float* x, uint8_t* dst, int64_t n, const CodecParams& p);    // x [n] -> dst [row_bytes]
  void (*dequantize)(const uint8_t* src, float* y, int64_t n, const CodecParams& p);  // -> y [n]
  // Σ_i dequant(src)_i · q_i, accumulated in f32 (fused: no f32 row is materialised).
  float (*dot)(const uint8_t* src, const float* q, int64_t n, const CodecParams& p);
  // acc_i += w · dequant(src)_i (the weighted sum over V).
  void (*axpy)(const uint8_t* src, float w, float* acc, int64_t n, const CodecParams& p);
  // dot for n_rows rows (row r at src + r·row_bytes) × n_q queries (q_j = q + j·q_stride):
  // out[j·out_stride + r], each bit-identical to dot (kv/formats/codec_kernels.h).
  void (*dot_rows)(const uint8_t* src, uint64_t row_bytes, int n_rows, const float* q, int64_t q_stride, int n_q,
                   int64_t n, float* out, int64_t out_stride, const CodecParams& p);
  // axpy of rows r = 0..n_rows-1 in ascending order into n_w accumulator rows: acc + j·acc_stride
  // with weight w[j·w_stride + r]; bit-identical to the axpy sequence.
  void (*axpy_rows)(const uint8_t* src, uint64_t row_bytes, int n_rows, const float* w, int64_t w_stride, int n_w,
                    float* acc, int64_t acc_stride, int64_t n, const CodecParams& p);
};

}  // namespace kvaudit

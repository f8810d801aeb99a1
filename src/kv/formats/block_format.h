// The RowCodec plumbing of a ggml block format, from its traits row (quant/quant_type.h): rows of
// n / 32 blocks of block_bytes, written by the reference quantizer and read by the reference
// dequantizer. Make<Kernels>() gives the codec with Kernels' dot/axpy (kv/formats/codec_kernels.h:
// the format's decoder, or the scalar twins).
#pragma once

#include <cstdint>

#include "kv/formats/codec_kernels.h"
#include "kv/formats/row_codec.h"
#include "quant/quant_type.h"

namespace kvaudit {

template <QuantType kType>
struct BlockFormat {
  static constexpr const QuantTraits& kTraits = kQuantTable[static_cast<int>(kType)];
  // Its reference quantizer exists: quant_type_test EveryKvBlockFormatIsItsTraitsRow (GCC does not
  // fold a function pointer's comparison with null under -fsanitize=address).
  static_assert(kTraits.block_elems == ggml::kQK, "a KV block format is a 32-element ggml type");

  static uint64_t RowBytes(int64_t n, const CodecParams&) {
    return static_cast<uint64_t>(n / ggml::kQK) * kTraits.block_bytes;
  }
  static double Bits(int64_t, const CodecParams&) { return kTraits.block_bytes * 8.0 / ggml::kQK; }
  static void Quantize(const float* x, uint8_t* dst, int64_t n, const CodecParams&) { kTraits.quantize_ref(x, dst, n); }
  static void Dequantize(const uint8_t* src, float* y, int64_t n, const CodecParams&) {
    kTraits.dequantize_ref(src, y, n);
  }
  template <class Kernels>
  static RowCodec Make() {
    return MakeRowCodec<Kernels>(kTraits.name, ggml::kQK, RowBytes, Bits, Quantize, Dequantize);
  }
};

}  // namespace kvaudit

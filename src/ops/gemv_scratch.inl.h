// The chunk step of the decode gemv's scratch kernels (ops/matmul.cc on AVX-512 for the block
// types without an in-register decoder, ops/matmul_avx2.cc for all of them): a chunk of a group
// of W rows dequantized into an L1 scratch that the kernel's FMAs then read. Internal to ops.
//
// Per kernel path: no include guard; a kernel section includes it inside its pass, after
// quant/dequantize.h and <cstring>.

namespace {

// s[j] [kRows][kChunk]: elements [k0, k0 + len) of block-type row wr[j], j < nj, dequantized with
// this path's DequantizeBlocks (bitwise the reference); rows nj..kRows-1 repeat row nj - 1 (the
// kernels keep one shape and store only the valid outputs). The same bytes of ahead[j] (rows
// further down the matrix; null: none) are prefetched: the weights stream from L3 or DRAM, and
// several interleaved row streams are more than the hardware prefetcher keeps ahead of.
template <int kRows, int64_t kChunk>
inline void DequantizeChunk(const WeightView& w, const uint8_t* const* wr, const uint8_t* const* ahead, int nj,
                            int64_t k0, int64_t len, float (*s)[kChunk]) {
  const QuantTraits& info = GetQuantTraits(w.type);
  const size_t offset = static_cast<size_t>(k0 / info.block_elems) * info.block_bytes;
  const size_t chunk_bytes = static_cast<size_t>(len / info.block_elems) * info.block_bytes;
  for (int j = 0; j < nj; ++j) {
    if (ahead[j]) {
      for (size_t b = 0; b < chunk_bytes; b += 64)
        _mm_prefetch(reinterpret_cast<const char*>(ahead[j] + offset + b), _MM_HINT_T0);
    }
    KVAUDIT_ISA_NS::DequantizeBlocks(w.type, wr[j] + offset, s[j], len);
  }
  for (int j = nj; j < kRows; ++j) std::memcpy(s[j], s[nj - 1], sizeof(float) * len);
}

}  // namespace

// DequantizeBlocks (this build's SIMD twin) against DequantizeBlocksRef, per block type, as the
// packed-weight matmul uses them: one row of `cols` elements at a time into an L1-sized f32 buffer,
// over `rows` rows of random blocks (the weights stream from L2/L3 or memory, the output stays hot).
//   block_dequant_bench [cols=4096] [rows=256] [reps=20]
// Prints ns per output element and output GB/s (f32 written), minimum over reps, single thread.
// Repetitions alternate ref / simd so both see the same cache and load conditions.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "quant/dequantize.h"
#include "base/simd.h"

using namespace kvaudit;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// [n_blocks] random blocks whose f16 fields are finite and normal (as in real weights: no block
// takes the twin's NaN fallback), E8M0 scales 2^-8..2^-1 (no subnormal or infinite weights).
std::vector<uint8_t> RandomBlocks(QuantType t, size_t n_blocks, uint32_t seed) {
  const size_t bb = static_cast<size_t>(GetQuantTraits(t).block_bytes);
  std::vector<uint8_t> b(n_blocks * bb);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : b) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<uint8_t>(s);
  }
  for (size_t i = 0; i < n_blocks; ++i) {
    for (const int off : F16Fields(t))
      b[i * bb + static_cast<size_t>(off) + 1] = static_cast<uint8_t>(0x20 | (b[i * bb + off + 1] & 0x83));
    if (E8M0Field(t) >= 0) b[i * bb + static_cast<size_t>(E8M0Field(t))] = static_cast<uint8_t>(120 + (b[i * bb] & 7));
  }
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t cols = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 256;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 20;
  std::printf("path: %s; cols %lld, rows %lld, reps %d\n",
              Avx512Kernels()       ? "AVX-512"
              : Avx2MatmulKernels() ? "AVX2"
                                    : "scalar (no twin)",
              static_cast<long long>(cols), static_cast<long long>(rows), reps);
  std::printf("%-8s %12s %12s %12s %12s %8s\n", "type", "ref ns/elt", "simd ns/elt", "ref GB/s", "simd GB/s",
              "speedup");
  std::vector<float> out(static_cast<size_t>(cols));  // [cols]
  for (int ti = 0; ti < kNumQuantTypes; ++ti) {
    const auto t = static_cast<QuantType>(ti);
    if (!IsBlockType(t) || cols % GetQuantTraits(t).block_elems != 0) continue;
    const size_t row_bytes = QuantRowBytes(t, cols);
    const std::vector<uint8_t> w =
        RandomBlocks(t, row_bytes / GetQuantTraits(t).block_bytes * rows, 17u + ti);  // [rows, row_bytes]
    double best[2] = {1e30, 1e30};
    float sink = 0;
    for (int r = 0; r < reps; ++r) {
      for (int path = 0; path < 2; ++path) {
        const double t0 = Now();
        for (int64_t i = 0; i < rows; ++i) {
          const uint8_t* src = w.data() + static_cast<size_t>(i) * row_bytes;
          if (path == 0)
            DequantizeBlocksRef(t, src, out.data(), cols);
          else
            DequantizeBlocks(t, src, out.data(), cols);
          sink += out[static_cast<size_t>(i % cols)];
        }
        best[path] = std::min(best[path], Now() - t0);
      }
    }
    const double elts = static_cast<double>(cols) * static_cast<double>(rows);
    std::printf("%-8s %12.3f %12.3f %12.2f %12.2f %7.1fx%s\n", QuantTypeName(t), best[0] / elts * 1e9,
                best[1] / elts * 1e9, elts * 4 / best[0] / 1e9, elts * 4 / best[1] / 1e9, best[0] / best[1],
                sink == 12345.678f ? " " : "");
  }
  return 0;
}

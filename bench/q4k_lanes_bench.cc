// llama.cpp's repacked q4_K product (engine=llama.cpp) two ways, single thread: Q4KGroupRows on the
// rows as stored, and PackQ4KLanes + Q4KLaneRows (ops/ggml/q4_k_lanes.h: each group of 8 rows packed
// once, then multiplied with its rows in lanes), for 4..64 activation rows: where the packing pays
// for itself (q4_k_repack.cc's kLaneMinRows) and what the lanes gain in a prefill.
//   q4k_lanes_bench [cols=2048] [rows=8192] [reps=7]
// Prints ms per product (minimum over reps; the two ways alternate within each rep) and the ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "ops/ggml/q4_k_lanes.h"
#include "ops/ggml/q4_k_repack.h"
#include "quant/ggml_blocks.h"

using namespace kvaudit;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// [rows × cols/256] random q4_K blocks with finite, normal d and dmin.
std::vector<uint8_t> RandomQ4K(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::vector<uint8_t> w(static_cast<size_t>(rows * cols / ggml::kQK_K) * sizeof(ggml::BlockQ4_K));
  for (uint8_t& v : w) v = static_cast<uint8_t>(rng());
  for (size_t b = 0; b < w.size(); b += sizeof(ggml::BlockQ4_K)) {
    ggml::StoreF16(&w[b], 1e-3f * static_cast<float>(1 + rng() % 100));
    ggml::StoreF16(&w[b + 2], 1e-4f * static_cast<float>(1 + rng() % 100));
  }
  return w;
}

// All activation rows against all groups, the gemm's 4 rows at a time, one way.
void Product(bool lanes, const std::vector<uint8_t>& w, int64_t rows, int64_t nb, const ggml::Q4KActivations& a,
             uint8_t* packed, float* y) {
  const int64_t n = static_cast<int64_t>(a.rows.size()), row_bytes = nb * sizeof(ggml::BlockQ4_K);
  for (int64_t r = 0; r < rows; r += 8) {
    const uint8_t* group[8];  // [8] the group's rows as stored
    for (int l = 0; l < 8; ++l) group[l] = w.data() + (r + l) * row_bytes;
    if (lanes) ggml::PackQ4KLanes(group, 8, nb, packed);
    for (int64_t i = 0; i < n; i += 4) {
      if (lanes)
        ggml::Q4KLaneRows(packed, 8, &a.rows[i], 4, nb, 4, y + i * rows + r, rows);
      else
        ggml::Q4KGroupRows(group, 8, &a.rows[i], 4, nb, 4, y + i * rows + r, rows);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t cols = argc > 1 ? std::atoll(argv[1]) : 2048, rows = argc > 2 ? std::atoll(argv[2]) : 8192;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 7;
  if (cols <= 0 || cols % ggml::kQK_K != 0 || rows <= 0 || rows % 8 != 0 || reps <= 0) {
    std::fprintf(stderr, "usage: q4k_lanes_bench [cols: a multiple of 256] [rows: a multiple of 8] [reps]\n");
    return 2;
  }
  const int64_t nb = cols / ggml::kQK_K;
  std::mt19937 rng(1);
  const std::vector<uint8_t> w = RandomQ4K(rows, cols, rng);                        // [rows × nb blocks]
  std::vector<uint8_t> packed(static_cast<size_t>(nb * ggml::kQ4KLaneBlockBytes));  // [nb packed blocks]
  std::printf("q4_K %lld x %lld, single thread, minimum of %d reps\n", static_cast<long long>(rows),
              static_cast<long long>(cols), reps);
  for (const int64_t n : {4, 8, 12, 16, 32, 64}) {
    std::vector<float> x(static_cast<size_t>(n * cols));  // [n, cols]
    std::normal_distribution<float> normal;
    for (float& v : x) v = normal(rng);
    const ggml::Q4KActivations a = ggml::QuantizeForQ4KRepacked(x.data(), n, cols);
    std::vector<float> y(static_cast<size_t>(n * rows));  // [n, rows]
    double best[2] = {1e30, 1e30};                        // [stored, lanes] seconds
    for (int rep = 0; rep < reps; ++rep) {
      for (int way = 0; way < 2; ++way) {
        const double t0 = Now();
        Product(way == 1, w, rows, nb, a, packed.data(), y.data());
        best[way] = std::min(best[way], Now() - t0);
      }
    }
    std::printf("%3lld activation rows: rows as stored %7.2f ms, lanes %7.2f ms: %.2fx\n", static_cast<long long>(n),
                1e3 * best[0], 1e3 * best[1], best[0] / best[1]);
  }
  return 0;
}

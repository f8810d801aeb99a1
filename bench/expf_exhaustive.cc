// Checks kv/llamacpp/expf.h's SIMD expf against the C library's expf on every float (2^32 bit
// patterns), or on [lo, hi) bit patterns: `expf_exhaustive [THREADS] [LO_HEX HI_HEX]`. Prints the
// mismatch count and the first mismatches; exit status 1 if any. A benchmark of sorts: it also
// times both (seconds for all patterns, per thread). The kernel checked is the active path's
// (base/isa.h: KVAUDIT_ISA=avx512|avx2 picks one; on the portable path it is the libm call itself).
#include <bit>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "base/isa.h"
#include "kv/llamacpp/expf.h"

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const uint64_t lo = argc > 3 ? std::strtoull(argv[2], nullptr, 16) : 0;
  const uint64_t hi = argc > 3 ? std::strtoull(argv[3], nullptr, 16) : (uint64_t{1} << 32);
  std::vector<uint64_t> bad(threads, 0), first(threads, ~uint64_t{0});
  std::vector<double> t_simd(threads, 0), t_libm(threads, 0);
  auto work = [&](int t) {
    constexpr int kBatch = 1 << 14;
    std::vector<float> x(kBatch), y(kBatch), z(kBatch);
    const uint64_t span = (hi - lo + threads - 1) / threads, a = lo + t * span, b = std::min(hi, a + span);
    for (uint64_t base = a; base < b; base += kBatch) {
      const int n = static_cast<int>(std::min<uint64_t>(kBatch, b - base));
      for (int i = 0; i < n; ++i) x[i] = std::bit_cast<float>(static_cast<uint32_t>(base + i));
      const auto t0 = std::chrono::steady_clock::now();
      kvaudit::llamacpp::ExpBatchSimdUnchecked(x.data(), y.data(), n);
      const auto t1 = std::chrono::steady_clock::now();
      kvaudit::llamacpp::ExpBatchScalar(x.data(), z.data(), n);
      const auto t2 = std::chrono::steady_clock::now();
      t_simd[t] += std::chrono::duration<double>(t1 - t0).count();
      t_libm[t] += std::chrono::duration<double>(t2 - t1).count();
      for (int i = 0; i < n; ++i) {
        if (std::bit_cast<uint32_t>(y[i]) != std::bit_cast<uint32_t>(z[i])) {
          if (bad[t]++ == 0) first[t] = base + i;
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  uint64_t total = 0;
  double ts = 0, tl = 0;
  for (int t = 0; t < threads; ++t) {
    total += bad[t];
    ts += t_simd[t];
    tl += t_libm[t];
    if (bad[t]) {
      const float x = std::bit_cast<float>(static_cast<uint32_t>(first[t]));
      std::printf("first mismatch (thread %d): x = %a (0x%08" PRIx64 "): libm %a\n", t, x, first[t], std::exp(x));
    }
  }
  const kvaudit::Isa isa = kvaudit::ActiveIsa();
  std::printf("path %s: patterns [0x%" PRIx64 ", 0x%" PRIx64 "): %" PRIu64
              " mismatches; self-check %s; "
              "simd %.2f s, libm %.2f s (thread-seconds)\n",
              kvaudit::IsaName(isa), lo, hi, total,
              isa == kvaudit::Isa::kPortable        ? "none (no SIMD kernel on this path)"
              : kvaudit::llamacpp::ExpBatchIsSimd() ? "passed"
                                                    : "FAILED",
              ts, tl);
  return total == 0 ? 0 : 1;
}

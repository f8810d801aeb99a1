// This machine's two physical limits that bound a forward pass, measured the way STREAM does
// (McCalpin, "Memory Bandwidth and Machine Balance", 1995): decode reads every weight once per
// token, so its ceiling is DRAM bandwidth; prefill is FMA-bound, so its ceiling is the FMA peak.
//   machine_limits_bench [threads] [MiB per array] [reps]
// Bandwidth: arrays far larger than the caches (default 256 MiB each), each thread on its own
// contiguous slice; per kernel the best of `reps` (default 10) passes, as STREAM reports.
//   read   s += a[i]            (4 bytes per element: what a gemv over weights does)
//   triad  a[i] = b[i] + q·c[i] (STREAM's count: 12 bytes per element, write-allocate not counted)
// FMA peak: per thread, 10 independent 8-lane FMA chains (enough to cover FMA latency × the two
// ports), 2 flops per lane per FMA; AVX2+FMA when the CPU has it, else reported as absent.
// Results: GB/s = 1e9 bytes/s, GFLOP/s = 1e9 flops/s. BENCHMARKS.md "The machine's limits".
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "base/isa.h"

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Runs fn(thread, begin, end) on `threads` threads over [0, n) and returns the wall seconds.
template <typename Fn>
double Timed(int threads, size_t n, Fn fn) {
  std::vector<std::thread> pool;
  const double t0 = Now();
  for (int t = 0; t < threads; ++t) pool.emplace_back(fn, t, n * t / threads, n * (t + 1) / threads);
  for (std::thread& th : pool) th.join();
  return Now() - t0;
}

// Read-only sum with four 8-lane accumulators (a scalar loop would be bound by its adds, not by
// memory), AVX2 where the CPU has it.
typedef float v8 __attribute__((vector_size(32)));
__attribute__((target("avx2"))) float ReadSliceAvx2(const float* a, size_t b, size_t e) {
  v8 s[4] = {};  // [4] accumulators
  size_t i = b;
  for (; i + 32 <= e; i += 32)
    for (int j = 0; j < 4; ++j) {
      v8 v;
      std::memcpy(&v, a + i + 8 * j, sizeof v);
      s[j] += v;
    }
  float total = 0;
  for (; i < e; ++i) total += a[i];
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 8; ++l) total += s[j][l];
  return total;
}
float ReadSliceScalar(const float* a, size_t b, size_t e) {
  float s[8] = {};  // [8] partial sums
  size_t i = b;
  for (; i + 8 <= e; i += 8)
    for (int l = 0; l < 8; ++l) s[l] += a[i + l];
  for (; i < e; ++i) s[0] += a[i];
  float total = 0;
  for (float v : s) total += v;
  return total;
}
float ReadSlice(const float* a, size_t b, size_t e) {
  return kvaudit::IsaSupported(kvaudit::Isa::kAvx2) ? ReadSliceAvx2(a, b, e) : ReadSliceScalar(a, b, e);
}

void TriadSlice(float* a, const float* b, const float* c, float q, size_t lo, size_t hi) {
  for (size_t i = lo; i < hi; ++i) a[i] = b[i] + q * c[i];
}

#if defined(__x86_64__)
// 10 chains × 8 lanes of fma, `iters` rounds; returns a value that depends on all of them.
__attribute__((target("avx2,fma"))) float FmaChains(long iters) {
  v8 acc[10];  // [10] independent chains
  const v8 m = {1.0000001f, 1.0000001f, 1.0000001f, 1.0000001f, 1.0000001f, 1.0000001f, 1.0000001f, 1.0000001f};
  const v8 a = {1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f};
  for (int j = 0; j < 10; ++j) acc[j] = a * static_cast<float>(j);
  for (long i = 0; i < iters; ++i)
    for (int j = 0; j < 10; ++j) acc[j] = __builtin_ia32_vfmaddps256(acc[j], m, a);
  float s = 0;
  for (int j = 0; j < 10; ++j)
    for (int l = 0; l < 8; ++l) s += acc[j][l];
  return s;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
  const size_t mib = argc > 2 ? static_cast<size_t>(std::max(8, std::atoi(argv[2]))) : 256;
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 10;
  const size_t n = mib * 1024 * 1024 / sizeof(float);
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 0.5f);  // [n] each, touched once before timing
  volatile float sink = 0;

  double best_read = 1e30, best_triad = 1e30;
  for (int r = 0; r < reps; ++r) {
    std::vector<float> part(threads);
    best_read = std::min(
        best_read, Timed(threads, n, [&](int t, size_t lo, size_t hi) { part[t] = ReadSlice(a.data(), lo, hi); }));
    for (float v : part) sink = sink + v;
    best_triad = std::min(best_triad, Timed(threads, n, [&](int, size_t lo, size_t hi) {
                            TriadSlice(a.data(), b.data(), c.data(), 0.5f, lo, hi);
                          }));
  }
  std::printf("threads %d, arrays %zu MiB, best of %d\n", threads, mib, reps);
  std::printf("read   %.1f GB/s\n", 4.0 * n / best_read / 1e9);
  std::printf("triad  %.1f GB/s\n", 12.0 * n / best_triad / 1e9);

#if defined(__x86_64__)
  if (kvaudit::IsaSupported(kvaudit::Isa::kAvx2)) {
    const long iters = 50'000'000;
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
      std::vector<float> out(threads);
      best = std::min(best, Timed(threads, threads, [&](int t, size_t, size_t) { out[t] = FmaChains(iters); }));
      for (float v : out) sink = sink + v;
    }
    const double flops = 2.0 * 8 * 10 * static_cast<double>(iters) * threads;
    std::printf("fma    %.1f GFLOP/s (AVX2, 8-lane FMA)\n", flops / best / 1e9);
  } else {
    std::printf("fma    (no AVX2+FMA on this CPU)\n");
  }
#endif
  return sink == 12345.0f ? 1 : 0;
}

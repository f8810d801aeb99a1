// Decode attention over one KV-cache layer of Llama-3-8B attention shape (32 query heads, 8 KV
// heads, head_dim 128) at depth D (default 32768), per KV format, next to the machine's measured
// streaming-read bandwidth (the targets: quantized formats reach >= 70% of the machine's memory
// bandwidth, q4_0 decode attention >= 3x faster than f16; BENCHMARKS.md "KV formats").
//   attention_bench [depth] [reps] [spec ...]
// Every cache is filled with the same pseudo-random K/V rows (Append in 512-row chunks), then one
// single-token Attend at position D (all 32 heads over D + 1 keys) is timed, for 1 and 2 threads.
// Repetitions run round-robin over formats and thread counts, so no cache is still in the LLC from
// its previous repetition and load from other processes hits every format alike. Bytes counted:
// the cache's bytes_used() = what the format holds for these D + 1 positions (packed rows incl.
// per-block scales/zeros, plus the f32 rows its protections keep, e.g. KIVI's recent window).
// Bandwidth: sum of a 1 GiB buffer of floats with AVX-512 loads (4 accumulators), ParallelFor over
// the threads, the same way round-robin (AVX-512 loads on the AVX-512 path, base/isa.h: the loops
// are compiled once per kernel path, base/isa_passes.h; the other paths sum in scalar code).
#ifndef KVAUDIT_ISA_PASS
#include "base/simd.h"  // first: wraps <immintrin.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kv/config/cache_config.h"
#include "kv/make_cache.h"
#include "model/config.h"
#include "ops/aligned_buffer.h"

#define KVAUDIT_ISA_SELF "../../bench/attention_bench.cc"  // from src/base/isa_passes.h
#include "base/isa_passes.h"                               // StreamSumPart / FmaChains below, once per kernel path

namespace kvaudit {
namespace {
float StreamSumPart(const float* p, int64_t m) { KVAUDIT_DISPATCH(StreamSumPart, p, m); }
float FmaChains(int64_t iters, int t) { KVAUDIT_DISPATCH(FmaChains, iters, t); }
}  // namespace
}  // namespace kvaudit

using namespace kvaudit;

namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
// CPU time of the calling thread: with 1 thread the whole Attend runs on it, so this is the time
// it took while scheduled (the machine is shared; wall time includes preemption).
double ThreadCpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ModelConfig Llama3_8BAttention(int max_ctx) {
  ModelConfig c;
  c.arch = Arch::kLlama;
  c.n_layers = 1;
  c.d_model = 4096;
  c.n_heads = 32;
  c.n_kv_heads = 8;
  c.head_dim = 128;
  c.d_ff = 14336;
  c.vocab_size = 128256;
  c.max_ctx = max_ctx;
  c.rms_eps = 1e-5f;
  c.rope.theta = 500000.0;
  return c;
}

// Sum of buf [n] floats over the pool's threads (AVX-512 loads, 4 independent accumulators).
float StreamSum(const float* buf, int64_t n, ThreadPool& pool) {
  std::vector<float> part(pool.size() * 16, 0.0f);
  const int64_t per = n / pool.size() / 64 * 64;
  pool.RunOnAll([&](int t) {
    const float* p = buf + t * per;
    const int64_t m = t + 1 == pool.size() ? n - t * per : per;
    const float s = StreamSumPart(p, m);
    part[t * 16] = s;
  });
  float s = 0;
  for (int t = 0; t < pool.size(); ++t) s += part[t * 16];
  return s;
}

// zmm FMAs per second of each of the pool's threads summed: 12 independent fma chains per thread
// (enough to cover the fma latency), `iters` rounds. The arithmetic ceiling of f32 attention: a
// decode step needs n_heads · n_keys · head_dim / 16 zmm FMAs for Q·K and as many for P·V.
double FmaPeak(int64_t iters, ThreadPool& pool) {
  std::vector<float> part(pool.size() * 16, 0.0f);
  const double t0 = Now();
  pool.RunOnAll([&](int t) { part[t * 16] = FmaChains(iters, t); });
  const double dt = Now() - t0;
  volatile float sink = part[0];
  (void)sink;
  return 12.0 * static_cast<double>(iters) * pool.size() / dt;
}

struct Entry {
  std::string spec;
  std::unique_ptr<KvCache> cache;
  uint64_t bytes = 0;
  std::vector<double> secs[2];  // [threads - 1] wall
  std::vector<double> cpu1;     // 1 thread: CPU time of the calling thread
};

}  // namespace

int main(int argc, char** argv) {
  const int depth = argc > 1 ? std::atoi(argv[1]) : 32768;
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 9;
  std::vector<std::string> specs;
  for (int i = 3; i < argc; ++i) specs.push_back(argv[i]);
  if (specs.empty()) {
    for (const char* f :
         {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "iq4_nl", "fp8_e4m3", "int4", "kivi2", "kivi4"}) {
      specs.push_back(std::string("kv=") + f);
    }
    specs.push_back("k=q4_0,v=q4_0,engine=llama.cpp");
  }
  const int n_pos = depth + 1;  // the query at position D sees keys [0, D]
  const ModelConfig c = Llama3_8BAttention(n_pos);
  const int kvd = c.n_kv_heads * c.head_dim, qd = c.n_heads * c.head_dim;

  // The same rows for every cache: N(0,1)-ish values (sum of 4 uniforms), a few channels scaled
  // up as real keys have outlier channels. k, v: [n_pos, n_kv_heads, head_dim].
  std::vector<float> k(static_cast<size_t>(n_pos) * kvd), v(k.size()), q(qd), out(qd);
  uint32_t s = 12345;
  auto rnd = [&] {
    float x = 0;
    for (int i = 0; i < 4; ++i) x += static_cast<float>((s = s * 1664525u + 1013904223u) >> 8) * (1.0f / 16777216.0f);
    return (x - 2.0f) * 1.7320508f;
  };
  for (size_t i = 0; i < k.size(); ++i) {
    const int ch = static_cast<int>(i % c.head_dim);
    k[i] = rnd() * (ch % 16 == 3 ? 8.0f : 1.0f);
    v[i] = rnd();
  }
  for (float& x : q) x = rnd();

  std::vector<Entry> entries;
  for (const std::string& spec : specs) {
    auto cache_config = CacheConfig::Parse(spec);
    if (!cache_config.ok()) {
      std::fprintf(stderr, "attention_bench: %s\n", cache_config.error().message.c_str());
      return 2;
    }
    auto cache = MakeCache(c, *cache_config, nullptr, n_pos);
    if (!cache.ok()) {
      std::fprintf(stderr, "attention_bench: %s\n", cache.error().message.c_str());
      return 2;
    }
    if (const Status s = (*cache)->Reserve(n_pos); !s.ok()) {  // as every kvaudit command does
      std::fprintf(stderr, "attention_bench: %s\n", s.error().message.c_str());
      return 2;
    }
    const double t0 = Now();
    for (int p = 0; p < n_pos; p += 512) {
      const int n = std::min(512, n_pos - p);
      const int64_t off = static_cast<int64_t>(p) * kvd;
      (*cache)->Append(0, p, n, k.data() + off, k.data() + off, v.data() + off);
    }
    Entry e;
    e.spec = spec;
    e.cache = std::move(*cache);
    e.bytes = e.cache->bytes_used();
    std::fprintf(stderr, "filled %-32s %8.1f MB in %.1f s\n", spec.c_str(), e.bytes / 1e6, Now() - t0);
    entries.push_back(std::move(e));
  }
  k = {};
  v = {};

  const int64_t bw_floats = int64_t{1} << 28;  // 1 GiB
  AlignedBuffer bw_buf(bw_floats);
  for (int64_t i = 0; i < bw_floats; ++i) bw_buf.data()[i] = static_cast<float>(i & 7);
  std::vector<double> bw_secs[2], bw_cpu1;

  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(2)};
  volatile float sink = 0;
  for (int rep = -2; rep < reps; ++rep) {  // two warm-up rounds
    for (int t = 0; t < 2; ++t) {
      double t0 = Now(), c0 = ThreadCpu();
      sink = sink + StreamSum(bw_buf.data(), bw_floats, pools[t]);
      if (rep >= 0) bw_secs[t].push_back(Now() - t0);
      if (rep >= 0 && t == 0) bw_cpu1.push_back(ThreadCpu() - c0);
      for (Entry& e : entries) {
        t0 = Now();
        c0 = ThreadCpu();
        e.cache->Attend(0, depth, 1, q.data(), out.data(), pools[t]);
        const double dt = Now() - t0, dc = ThreadCpu() - c0;
        sink = sink + out[0];
        if (rep >= 0) e.secs[t].push_back(dt);
        if (rep >= 0 && t == 0) e.cpu1.push_back(dc);
      }
    }
  }

  std::printf(
      "Llama-3-8B attention shape (32 heads, 8 KV heads, head_dim 128), 1 layer, decode at depth %d, "
      "median of %d\n",
      depth, reps);
  double bw[2];
  const double bw_cpu = bw_floats * 4.0 / Median(bw_cpu1) / 1e9;
  std::printf("streaming read, 1 thread, by CPU time: %.1f GB/s\n", bw_cpu);
  for (int t = 0; t < 2; ++t) {
    bw[t] = bw_floats * 4.0 / Median(bw_secs[t]) / 1e9;
    std::printf("streaming read, %d thread%s: %.1f GB/s  [", t + 1, t ? "s" : "", bw[t]);
    for (size_t i = 0; i < bw_secs[t].size(); ++i)
      std::printf("%s%.1f", i ? " " : "", bw_floats * 4.0 / bw_secs[t][i] / 1e9);
    std::printf("]\n");
  }
  // fp32 arithmetic floor of one decode step at this shape: 2 · n_heads · n_keys · head_dim / 16 FMAs.
  const double fmas = 2.0 * 32 * (depth + 1.0) * 128 / 16;
  for (int t = 0; t < 2; ++t) {
    std::vector<double> rates;
    for (int r = 0; r < 5; ++r) rates.push_back(FmaPeak(int64_t{1} << 26, pools[t]));
    const double rate = Median(rates);
    std::printf("zmm fma peak, %d thread%s: %.2f G/s -> f32 attention floor %.2f ms (%.1f M fmas)\n", t + 1,
                t ? "s" : "", rate / 1e9, fmas / rate * 1e3, fmas / 1e6);
  }
  const Entry* f16 = nullptr;
  for (const Entry& e : entries) {
    if (e.spec == "kv=f16") f16 = &e;
  }
  std::printf(
      "\n| format | MB read | 1T CPU ms | 1T CPU GB/s | %% of bw | f16/x | 1T ms | 1T GB/s | %%bw | f16/x | 2T ms | 2T "
      "GB/s | %%bw | f16/x |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Entry& e : entries) {
    const double mc = Median(e.cpu1), gc = e.bytes / mc / 1e9;
    std::printf("| %s | %.1f | %.2f | %.1f | %.0f%% | %s ", e.spec.c_str(), e.bytes / 1e6, mc * 1e3, gc,
                100.0 * gc / bw_cpu, f16 ? (std::to_string(Median(f16->cpu1) / mc).substr(0, 4)).c_str() : "-");
    for (int t = 0; t < 2; ++t) {
      const double m = Median(e.secs[t]), gbs = e.bytes / m / 1e9;
      std::printf("| %.2f | %.1f | %.0f%% | %s ", m * 1e3, gbs, 100.0 * gbs / bw[t],
                  f16 ? (std::to_string(Median(f16->secs[t]) / m).substr(0, 4)).c_str() : "-");
    }
    std::printf("|\n");
  }
  std::printf("\nindividual runs (ms):\n");
  for (const Entry& e : entries) {
    for (int t = 0; t < 2; ++t) {
      std::printf("%-32s %dT:", e.spec.c_str(), t + 1);
      for (double x : e.secs[t]) std::printf(" %.2f", x * 1e3);
      std::printf("\n");
    }
  }
  return sink == 12345.678f ? 1 : 0;
}

#else  // one kernel path, in namespace kvaudit::isa_<path> (base/isa_passes.h)
// Sum of p [m] floats, 4 independent accumulators.
float StreamSumPart(const float* p, int64_t m) {
#if defined(KVAUDIT_ISA_AVX512)
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 64 <= m; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  for (; i < m; ++i) s += p[i];
#else
  float s = 0;
  for (int64_t i = 0; i < m; ++i) s += p[i];
#endif
  return s;
}

// 12 fma chains of `iters` rounds on thread t; the sum of the chains (keeps them live).
float FmaChains(int64_t iters, int t) {
#if defined(KVAUDIT_ISA_AVX512)
  __m512 a[12];
  for (int k = 0; k < 12; ++k) a[k] = _mm512_set1_ps(static_cast<float>(k + t));
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    for (__m512& x : a) x = _mm512_fmadd_ps(x, m, c);
  }
  __m512 s = a[0];
  for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, a[k]);
  return _mm512_reduce_add_ps(s);
#else
  (void)t;
  return static_cast<float>(iters);
#endif
}

#endif  // KVAUDIT_ISA_PASS

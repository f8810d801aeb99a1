// Prefill attention alone, per KV spec: the Append + Attend calls one layer of a ctx-token window
// makes in model/forward.cc's 512-token chunks, with N(0, 1) Q/K/V; in the bundled model's
// attention shape (kvq-code-16m: 6 query heads, 2 KV heads, head_dim 64, llama channel order) or
// in a model's (MODEL: a .gguf or HF directory; only its config is read; layers that differ, e.g.
// sliding-window ones, are all timed as the first). For the engine=llama.cpp
// emulation against the native engine (BENCHMARKS.md "engine=llama.cpp made fast") and for the
// attention term of the long-context cost model (BENCHMARKS.md "Long context at real size").
//   prefill_attention_bench [ctx] [reps] [threads] [MODEL] [spec ...]
// Repetitions run round-robin over the specs; prints the median and all wall times per spec, and
// with MODEL the median times the model's layers (the whole forward pass's attention).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "kv/make_cache.h"
#include "kv/config/cache_config.h"
#include "model/config.h"
#include "model/model.h"

using namespace kvaudit;

int main(int argc, char** argv) {
  const int ctx = argc > 1 ? std::atoi(argv[1]) : 4096;
  const int reps = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  const int threads = argc > 3 ? std::max(1, std::atoi(argv[3])) : 2;
  // A spec always has a key=value; anything else in 4th place is the model whose shape is taken.
  const bool has_model = argc > 4 && std::string(argv[4]).find('=') == std::string::npos;
  std::vector<std::string> specs;
  for (int i = has_model ? 5 : 4; i < argc; ++i) specs.push_back(argv[i]);
  if (specs.empty())
    specs = {"k=q8_0,v=q8_0", "k=q8_0,v=q8_0,engine=llama.cpp", "k=q4_0,v=q4_0", "k=q4_0,v=q4_0,engine=llama.cpp"};
  ModelConfig c;
  c.arch = Arch::kLlama;
  c.n_layers = 1;
  c.n_heads = 6;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.d_model = 384;
  if (has_model) {
    auto loaded = LoadModelConfig(argv[4]);
    if (!loaded.ok()) {
      std::fprintf(stderr, "prefill_attention_bench: %s\n", loaded.error().message.c_str());
      return 2;
    }
    c = loaded.value();
  }
  const int n_layers = c.n_layers;
  c.n_layers = 1;
  c.max_ctx = ctx;
  constexpr int kChunk = 512;
  const int qw = c.n_heads * c.head_dim, kw = c.n_kv_heads * c.head_dim;
  std::vector<float> q(static_cast<size_t>(ctx) * qw), k(static_cast<size_t>(ctx) * kw), v(k.size()), out(q.size());
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  for (float& x : q) x = normal(gen);
  for (float& x : k) x = normal(gen);
  for (float& x : v) x = normal(gen);
  ThreadPool pool(threads);
  std::vector<std::vector<double>> secs(specs.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t s = 0; s < specs.size(); ++s) {
      auto cache_config = CacheConfig::Parse(specs[s]);
      if (!cache_config.ok()) {
        std::fprintf(stderr, "bad spec %s\n", specs[s].c_str());
        return 2;
      }
      auto cache = MakeCache(c, cache_config.value(), nullptr, ctx);
      if (!cache.ok()) {
        std::fprintf(stderr, "cannot make %s\n", specs[s].c_str());
        return 2;
      }
      KvCache& kv = *cache.value();
      const auto t0 = std::chrono::steady_clock::now();
      for (int p0 = 0; p0 < ctx; p0 += kChunk) {
        const int n = std::min(kChunk, ctx - p0);
        kv.Append(0, p0, n, &k[static_cast<size_t>(p0) * kw], &k[static_cast<size_t>(p0) * kw],
                  &v[static_cast<size_t>(p0) * kw]);
        kv.Attend(0, p0, n, &q[static_cast<size_t>(p0) * qw], &out[static_cast<size_t>(p0) * qw], pool);
      }
      secs[s].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::printf(
      "prefill attention, 1 layer (%d query heads, %d KV heads, head_dim %d), ctx %d, %d threads, %d reps "
      "(median, then all), s:\n",
      c.n_heads, c.n_kv_heads, c.head_dim, ctx, threads, reps);
  for (size_t s = 0; s < specs.size(); ++s) {
    std::vector<double> v2 = secs[s];
    std::sort(v2.begin(), v2.end());
    std::printf("  %-36s %.4f  [", specs[s].c_str(), v2[v2.size() / 2]);
    for (double t : secs[s]) std::printf(" %.4f", t);
    std::printf(" ]");
    if (has_model) std::printf("  x %d layers = %.2f", n_layers, n_layers * v2[v2.size() / 2]);
    std::printf("\n");
  }
  return 0;
}

// Decode speed per KV-cache configuration on a model (default: the bundled kvq-code-16m), side by
// side in one process (BENCHMARKS.md "Decode tok/s on the bundled model at depth 4000").
//   decode_kv_bench [model] [depth] [reps] [tokens_per_rep] [spec ...]
// Per spec and per thread count (1, 2): one cache, prefilled once with `depth` pseudo-random
// tokens; then `reps` rounds, each decoding `tokens_per_rep` tokens one at a time per (spec,
// threads), round-robin over all of them so load from other processes hits every configuration
// alike. Round r decodes positions depth + r·tokens_per_rep onwards (KIVI stores only append, so
// the cache grows: with the defaults the depth runs 4000..4160). Prints tokens/s medians and runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kv/config/cache_config.h"
#include "kv/make_cache.h"
#include "model/forward.h"
#include "model/model.h"
#include "run/decode_speed.h"

using namespace kvaudit;

namespace {
double Now() { return SteadySeconds(); }
double Median(std::vector<double> v) { return MedianOf(std::move(v)); }

struct Run {
  std::string spec;
  int threads;
  std::unique_ptr<KvCache> cache;
  std::unique_ptr<Forward> fwd;
  std::vector<double> tps;  // tokens/s per round
};
}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : KVAUDIT_BUNDLED_MODEL;
  const int depth = argc > 2 ? std::atoi(argv[2]) : 4000;
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const int n_tok = argc > 4 ? std::max(1, std::atoi(argv[4])) : 32;
  std::vector<std::string> specs;
  for (int i = 5; i < argc; ++i) specs.push_back(argv[i]);
  if (specs.empty()) {
    specs = {"kv=f32", "kv=f16", "kv=q8_0", "kv=q4_0", "kv=kivi2", "k=q4_0,v=q4_0,engine=llama.cpp"};
  }
  auto model = Model::Load(path);
  if (!model.ok()) {
    std::fprintf(stderr, "decode_kv_bench: %s\n", model.error().message.c_str());
    return model.error().exit_code();
  }
  const ModelConfig& c = (*model)->config();
  const int max_pos = depth + (reps + 1) * n_tok;
  std::vector<int32_t> ids(max_pos);
  uint32_t s = 12345;
  for (int32_t& t : ids) t = static_cast<int32_t>((s = s * 1664525u + 1013904223u) >> 8) % c.vocab_size;
  std::vector<float> logits(c.vocab_size);
  ThreadPool pools[2] = {ThreadPool(1), ThreadPool(2)};

  std::vector<Run> runs;
  for (const std::string& spec : specs) {
    auto cache_config = CacheConfig::Parse(spec);
    if (!cache_config.ok()) {
      std::fprintf(stderr, "decode_kv_bench: %s\n", cache_config.error().message.c_str());
      return 2;
    }
    for (int t = 1; t <= 2; ++t) {
      auto cache = MakeCache(c, *cache_config, nullptr, max_pos);
      if (!cache.ok()) {
        std::fprintf(stderr, "decode_kv_bench: %s\n", cache.error().message.c_str());
        return 2;
      }
      if (const Status st = (*cache)->Reserve(max_pos); !st.ok()) {  // as every kvaudit command does
        std::fprintf(stderr, "decode_kv_bench: %s\n", st.error().message.c_str());
        return 2;
      }
      Run r;
      r.spec = spec;
      r.threads = t;
      r.cache = std::move(*cache);
      r.fwd = std::make_unique<Forward>(**model, *r.cache, pools[1], max_pos);  // prefill with 2 threads
      const double t0 = Now();
      r.fwd->Run(std::span<const int32_t>(ids.data(), depth), 0, logits.data(), false);
      std::fprintf(stderr, "prefilled %-34s (%dT cache) in %.1f s\n", spec.c_str(), t, Now() - t0);
      r.fwd = std::make_unique<Forward>(**model, *r.cache, pools[t - 1], max_pos);
      runs.push_back(std::move(r));
    }
  }
  for (int rep = -1; rep < reps; ++rep) {  // round -1: warm-up (one token each)
    // Warm-up decodes position `depth`; round r decodes [depth + 1 + r·n_tok, ... + n_tok).
    const int start = rep < 0 ? depth : depth + 1 + rep * n_tok, n = rep < 0 ? 1 : n_tok;
    for (Run& r : runs) {
      const double t0 = Now();
      for (int i = 0; i < n; ++i)
        r.fwd->Run(std::span<const int32_t>(&ids[start + i], 1), start + i, logits.data(), false);
      if (rep >= 0) r.tps.push_back(n / (Now() - t0));
    }
  }
  std::printf("model %s, decode %d tokens per round at depth %d..%d, median of %d rounds (tokens/s)\n", path.c_str(),
              n_tok, depth, depth + reps * n_tok, reps);
  std::printf("| KV spec | bytes/token | 1 thread | 2 threads |\n|---|---|---|---|\n");
  for (size_t i = 0; i + 1 < runs.size(); i += 2) {
    auto all = [](const std::vector<double>& v) {
      std::string s;
      for (double x : v) s += (s.empty() ? "" : " ") + std::to_string(static_cast<int>(x + 0.5));
      return s;
    };
    std::printf("| %s | %llu | **%.0f** [%s] | **%.0f** [%s] |\n", runs[i].spec.c_str(),
                static_cast<unsigned long long>(runs[i].cache->bytes_per_token()), Median(runs[i].tps),
                all(runs[i].tps).c_str(), Median(runs[i + 1].tps), all(runs[i + 1].tps).c_str());
  }
  return 0;
}

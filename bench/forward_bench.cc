// Forward-pass speed on a model (default: the bundled kvq-code-16m), f32 KV cache.
//   forward_bench [model] [threads] [prefill_tokens] [decode_depth] [reps] [what] [arithmetic]
// Prints the median of `reps` (default 5) runs of: prefill of N tokens (one sequence, last-token
// logits, as llama-bench pp), decode of 128 tokens at depth 0 and at depth D (as llama-bench tg /
// -d D); for a dense model, the weight bytes one decode step reads and decode's GB/s of them. `what` (default "all") =
// pp | tg0 | tgd runs one of them only (for perf stat/record); ppall is pp with every position's logits, in chunks of
// Forward::kMaxChunk, as eval scores a window (the output matrix applied to every row, not only the last). Token ids
// are deterministic pseudo-random; speed does not depend on them. `arithmetic` (the weight products): stored (default:
// the native engine's exact products on the weights as stored), f32 (the same, the matrices dequantized to f32 at load:
// WeightLoadOptions::dequantize_at_load), or llama.cpp (engine=llama.cpp: llama.cpp's weight arithmetic,
// ops/ggml/llamacpp_matmul.h, and its flash attention over an f32 cache). Any other value is an error (exit 2). The
// model line names it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kv/config/cache_config.h"
#include "kv/make_cache.h"
#include "model/forward.h"
#include "model/model.h"

using namespace kvaudit;

namespace {
double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
// Bytes of weights one decode step reads (every matrix in full but the embedding table, of which it
// reads one row; tied embeddings are read in full as the output matrix), the same for llama.cpp on
// the same file; 0 for a mixture of experts, whose step reads only its routed experts.
uint64_t DecodeBytesPerToken(const ModelWeights& w, const ModelConfig& c) {
  if (c.n_experts > 0) return 0;
  return w.bytes() - (w.lm_head.empty() ? 0 : w.embed.bytes());
}
}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : KVAUDIT_BUNDLED_MODEL;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int n_prefill = argc > 3 ? std::atoi(argv[3]) : 4096;
  const int depth = argc > 4 ? std::atoi(argv[4]) : 4096;
  const int reps = argc > 5 ? std::max(1, std::atoi(argv[5])) : 5;
  const std::string what = argc > 6 ? argv[6] : "all";
  const std::string arithmetic = argc > 7 ? argv[7] : "stored";
  if (arithmetic != "stored" && arithmetic != "f32" && arithmetic != "llama.cpp") {
    std::fprintf(stderr, "forward_bench: unknown arithmetic '%s'; hint: stored, f32 or llama.cpp\n",
                 arithmetic.c_str());
    return 2;
  }
  if (what != "all" && what != "pp" && what != "ppall" && what != "tg0" && what != "tgd") {
    std::fprintf(stderr, "forward_bench: unknown test '%s'; hint: all, pp, ppall, tg0 or tgd\n", what.c_str());
    return 2;
  }
  const bool f32_weights = arithmetic == "f32";
  const bool every_logit = what == "ppall";
  const bool do_pp = what == "all" || what == "pp" || every_logit, do_tg0 = what == "all" || what == "tg0";
  const bool do_tgd = (what == "all" || what == "tgd") && depth > 0;
  const int n_decode = 128;
  auto model = Model::Load(path, {.dequantize_at_load = f32_weights});
  if (!model.ok()) {
    std::fprintf(stderr, "kvaudit: %s\n", model.error().message.c_str());
    return model.error().exit_code();
  }
  const ModelConfig& c = (*model)->config();
  ThreadPool pool(threads);
  const std::string spec = arithmetic == "llama.cpp" ? "k=f32,v=f32,engine=llama.cpp" : "k=f32,v=f32";
  auto built = MakeCache(c, *CacheConfig::Parse(spec), nullptr, std::max(n_prefill, depth + n_decode));
  KV_CHECK_MSG(built.ok(), built.ok() ? "" : built.error().message.c_str());
  std::unique_ptr<KvCache> cache = std::move(*built);
  KV_CHECK(cache->Reserve(std::max(n_prefill, depth + n_decode)).ok());       // as every kvaudit command does
  Forward fwd(**model, *cache, pool, std::max(n_prefill, depth + n_decode));  // the cache is the run's context
  std::vector<int32_t> ids(std::max(n_prefill, depth + n_decode));
  uint32_t s = 12345;
  for (int32_t& t : ids) t = static_cast<int32_t>((s = s * 1664525u + 1013904223u) >> 8) % c.vocab_size;
  // [kMaxChunk][vocab] with ppall (a chunk's rows, as eval holds them), else [vocab]
  std::vector<float> logits(static_cast<size_t>(every_logit ? Forward::kMaxChunk : 1) * c.vocab_size);

  std::vector<double> pp, tg0, tgd;
  for (int rep = 0; rep < reps; ++rep) {
    double t;
    if (do_pp) {
      cache->Reset();
      t = Now();
      if (every_logit) {
        for (int p0 = 0; p0 < n_prefill; p0 += Forward::kMaxChunk) {
          const int n = std::min(Forward::kMaxChunk, n_prefill - p0);
          fwd.Run(std::span<const int32_t>(&ids[p0], n), p0, logits.data(), true);
        }
      } else {
        fwd.Run(std::span<const int32_t>(ids.data(), n_prefill), 0, logits.data(), false);
      }
      pp.push_back(n_prefill / (Now() - t));
    }
    if (do_tg0) {
      cache->Reset();
      t = Now();
      for (int i = 0; i < n_decode; ++i) fwd.Run(std::span<const int32_t>(&ids[i], 1), i, logits.data(), false);
      tg0.push_back(n_decode / (Now() - t));
    }
    if (do_tgd) {
      cache->Reset();
      fwd.Run(std::span<const int32_t>(ids.data(), depth), 0, logits.data(), false);
      t = Now();
      for (int i = 0; i < n_decode; ++i)
        fwd.Run(std::span<const int32_t>(&ids[depth + i], 1), depth + i, logits.data(), false);
      tgd.push_back(n_decode / (Now() - t));
    }
  }
  // Three significant digits below 1000 tokens/s (real-size models prefill tens and decode a few
  // per second; the long-context cost model divides by these), whole tokens/s above.
  auto rate = [](double x) {
    char one[32];
    std::snprintf(one, sizeof one, x < 10 ? "%.2f" : x < 100 ? "%.1f" : "%.0f", x);
    return std::string(one);
  };
  auto all = [&](const std::vector<double>& v) {
    std::string s;
    for (double x : v) s += (s.empty() ? "" : " ") + rate(x);
    return s;
  };
  std::printf("model %s (weights %s), arithmetic %s, %d threads, f32 KV cache, median of %d\n", path.c_str(),
              (*model)->weights().storage_summary().c_str(), arithmetic.c_str(), threads, reps);
  if (do_pp)
    std::printf("prefill %d tokens%s: %s tokens/s  [%s]\n", n_prefill, every_logit ? " (every position's logits)" : "",
                rate(Median(pp)).c_str(), all(pp).c_str());
  if (do_tg0) {
    std::printf("decode %d tokens at depth 0: %s tokens/s  [%s]\n", n_decode, rate(Median(tg0)).c_str(),
                all(tg0).c_str());
    // Decode's weight traffic, to set beside machine_limits_bench's DRAM read bandwidth: a file
    // larger than the last-level cache is read from memory at every step.
    if (const uint64_t bytes = DecodeBytesPerToken((*model)->weights(), c); bytes > 0) {
      std::printf("decode reads %.1f MB of weights per token: %.2f GB/s at the median\n", bytes / 1e6,
                  bytes * Median(tg0) / 1e9);
    }
  }
  if (do_tgd) {
    std::printf("decode %d tokens at depth %d: %s tokens/s  [%s]\n", n_decode, depth, rate(Median(tgd)).c_str(),
                all(tgd).c_str());
  }
  return 0;
}

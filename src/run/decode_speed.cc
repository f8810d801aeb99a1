#include "run/decode_speed.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <span>

#include "model/forward.h"

namespace kvaudit {
double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double MedianOf(std::vector<double> v) {
  KV_CHECK(!v.empty());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Expected<std::vector<DecodeSpeed>> MeasureDecodeSpeed(const Model& model, ThreadPool& pool, const KvConfigs& configs,
                                                      const std::vector<int32_t>& ids, const DecodeSpeedOptions& o) {
  KV_CHECK(o.depth >= 1 && o.tokens >= 1 && o.rounds >= 1);
  const int n_pos = o.depth + 1 + o.rounds * o.tokens;
  KV_CHECK(static_cast<int>(ids.size()) >= n_pos);
  const size_t n = configs.n_configs() + 1;
  std::vector<std::unique_ptr<KvCache>> caches;
  std::vector<std::unique_ptr<Forward>> forwards;
  std::vector<float> logits(static_cast<size_t>(model.config().vocab_size));  // [1, vocab]
  for (size_t i = 0; i < n; ++i) {
    KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, configs.MakeCache(i, n_pos));
    caches.push_back(std::move(cache));
    forwards.push_back(std::make_unique<Forward>(model, *caches.back(), pool, n_pos));
    forwards.back()->Run(std::span<const int32_t>(ids.data(), static_cast<size_t>(o.depth)), 0, logits.data(), false);
  }
  std::vector<DecodeSpeed> out(n);
  for (size_t i = 0; i < n; ++i) out[i].spec = i == 0 ? configs.config(0).spec() : configs.config(i).spec();
  for (int round = -1; round < o.rounds; ++round) {  // round -1: one warm-up step each
    const int start = round < 0 ? o.depth : o.depth + 1 + round * o.tokens, steps = round < 0 ? 1 : o.tokens;
    for (size_t i = 0; i < n; ++i) {
      const double t0 = SteadySeconds();
      for (int s = 0; s < steps; ++s) {
        forwards[i]->Run(std::span<const int32_t>(&ids[static_cast<size_t>(start + s)], 1), start + s, logits.data(),
                         false);
      }
      if (round >= 0) out[i].rounds.push_back(steps / (SteadySeconds() - t0));
    }
  }
  for (DecodeSpeed& d : out) d.tokens_per_s = MedianOf(d.rounds);
  return out;
}

}  // namespace kvaudit

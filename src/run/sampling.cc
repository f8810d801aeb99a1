#include "run/sampling.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace kvaudit {

int32_t Argmax(std::span<const float> logits) {
  KV_CHECK(!logits.empty());
  int32_t best = -1;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) continue;
    if (best < 0 || logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
  }
  return best < 0 ? 0 : best;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {}

double Sampler::UniformDraw() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::Sample(std::span<const float> logits) {
  if (params_.temperature <= 0.0f) return Argmax(logits);
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isnan(logits[i])) continue;
    candidates_.emplace_back(logits[i] / params_.temperature, static_cast<int32_t>(i));
  }
  KV_CHECK(!candidates_.empty());
  // Descending by value, ties by id: a total order, so the result never depends on sort stability.
  auto by_value = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep), candidates_.end(),
                      by_value);
    candidates_.resize(keep);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_value);
  }
  // Softmax over the survivors in double for a stable cumulative sum.
  std::vector<double> probs(keep);
  const double max_logit = candidates_[0].first;
  double total = 0;
  for (size_t i = 0; i < keep; ++i) total += probs[i] = std::exp(candidates_[i].first - max_logit);
  for (double& p : probs) p /= total;
  if (params_.top_p < 1.0f) {
    // Smallest prefix whose mass reaches top_p (always at least one token).
    double cum = 0;
    size_t n = 0;
    while (n < keep) {
      cum += probs[n++];
      if (cum >= params_.top_p) break;
    }
    keep = n;
  }
  if (params_.min_p > 0.0f) {
    const double threshold = params_.min_p * probs[0];
    size_t n = 1;
    while (n < keep && probs[n] >= threshold) ++n;
    keep = n;
  }
  // The draw walks the survivors in token-id order, not in rank order. Two nearby distributions
  // (a baseline and a quantized cache, sampled with the same seed by `probe`'s variance family)
  // then map the same uniform number to the same token unless probability mass really moved
  // across it; in rank order, any swap of two near-equal candidates would change the token and
  // read as divergence the cache hardly caused.
  kept_.clear();
  for (size_t i = 0; i < keep; ++i) kept_.emplace_back(candidates_[i].second, probs[i]);
  std::sort(kept_.begin(), kept_.end());
  double mass = 0;
  for (const auto& [id, p] : kept_) mass += p;
  double r = UniformDraw() * mass;
  for (const auto& [id, p] : kept_) {
    r -= p;
    if (r < 0) return id;
  }
  return kept_.back().first;
}

}  // namespace kvaudit

#include "eval/topk_fidelity.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "base/status.h"
#include "run/log_softmax.h"
#include "run/sampling.h"

namespace kvaudit {
namespace {

// The token's logprob on a side known by its top k, if known.
std::optional<double> Known(const TopKRow& row, int32_t id) {
  if (id == row.token) return row.logprob;
  for (const auto& [t, lp] : row.top) {
    if (t == id) return lp;
  }
  return std::nullopt;
}

// Whether `id` is among the first five of cfg's top list.
bool InTop5(const TopKRow& cfg, int32_t id) {
  for (size_t i = 0; i < cfg.top.size() && i < 5; ++i) {
    if (cfg.top[i].first == id) return true;
  }
  return false;
}

}  // namespace

double LumpedKl(const std::vector<std::pair<double, double>>& known) {
  double kl = 0, p_known = 0, q_known = 0;
  for (const auto& [lp, lq] : known) {
    const double p = std::exp(lp);
    if (p > 0) kl += p * (lp - lq);
    p_known += p, q_known += std::exp(lq);
  }
  // The rest as one category. Rounding can push a known mass a hair above 1: clamp at 0.
  const double p_rest = std::max(0.0, 1.0 - p_known), q_rest = std::max(0.0, 1.0 - q_known);
  if (p_rest > 0 && q_rest > 0) kl += p_rest * (std::log(p_rest) - std::log(q_rest));
  return std::max(0.0, kl);
}

PositionFidelity CompareTopK(const BaseRow& base, const TopKRow& cfg) {
  KV_CHECK(!cfg.top.empty() && cfg.token >= 0 && static_cast<size_t>(cfg.token) < base.vocab());
  PositionFidelity f;
  f.nll = -cfg.logprob;
  f.dp = std::exp(cfg.logprob) - std::exp(-base.nll());
  f.top1 = cfg.top[0].first == base.argmax();
  f.top5_drop = !InTop5(cfg, base.argmax());
  // Known on both sides: every token the configuration reports (the base is known everywhere).
  std::map<int32_t, double> cfg_known = {{cfg.token, cfg.logprob}};
  for (const auto& [t, lp] : cfg.top) cfg_known.emplace(t, lp);
  std::vector<std::pair<double, double>> known;
  for (const auto& [t, lq] : cfg_known) {
    KV_CHECK(t >= 0 && static_cast<size_t>(t) < base.vocab());
    known.push_back({base.logp(t), lq});
  }
  f.kld = LumpedKl(known);
  return f;
}

PositionFidelity CompareTopK(const TopKRow& base, const TopKRow& cfg) {
  KV_CHECK(!base.top.empty() && !cfg.top.empty() && base.token == cfg.token);
  PositionFidelity f;
  f.nll = -cfg.logprob;
  f.dp = std::exp(cfg.logprob) - std::exp(base.logprob);
  f.top1 = cfg.top[0].first == base.top[0].first;
  f.top5_drop = !InTop5(cfg, base.top[0].first);
  std::map<int32_t, double> base_known = {{base.token, base.logprob}};
  for (const auto& [t, lp] : base.top) base_known.emplace(t, lp);
  std::vector<std::pair<double, double>> known;
  for (const auto& [t, lp] : base_known) {
    if (const std::optional<double> lq = Known(cfg, t)) known.push_back({lp, *lq});
  }
  f.kld = LumpedKl(known);
  return f;
}

PositionFidelity CompareTopK(const TopKRow& base, std::span<const float> cfg) {
  KV_CHECK(!base.top.empty() && base.token >= 0 && static_cast<size_t>(base.token) < cfg.size());
  const double lse = LogSumExp(cfg);
  auto logq = [&](int32_t id) { return static_cast<double>(cfg[static_cast<size_t>(id)]) - lse; };
  PositionFidelity f;
  f.nll = lse - static_cast<double>(cfg[static_cast<size_t>(base.token)]);
  f.dp = std::exp(-f.nll) - std::exp(base.logprob);
  const int32_t base_top = base.top[0].first;
  f.top1 = Argmax(cfg) == base_top;
  // Rank of the base argmax under cfg, ties broken by index as Argmax does (BaseRow::Compare).
  const float a = cfg[static_cast<size_t>(base_top)];
  int above = 0;
  for (size_t i = 0; i < cfg.size() && above < 5; ++i) {
    if (cfg[i] > a || (cfg[i] == a && static_cast<int32_t>(i) < base_top)) ++above;
  }
  f.top5_drop = above >= 5;
  std::map<int32_t, double> base_known = {{base.token, base.logprob}};
  for (const auto& [t, lp] : base.top) base_known.emplace(t, lp);
  std::vector<std::pair<double, double>> known;
  for (const auto& [t, lp] : base_known) {
    KV_CHECK(t >= 0 && static_cast<size_t>(t) < cfg.size());
    known.push_back({lp, logq(t)});
  }
  f.kld = LumpedKl(known);
  return f;
}

}  // namespace kvaudit

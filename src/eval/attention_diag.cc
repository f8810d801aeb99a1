#include "eval/attention_diag.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "base/status.h"

namespace kvaudit {

std::vector<int> SampleQueryPositions(int n_run, const std::vector<Bucket>& buckets, int samples, int window) {
  std::vector<int> out;
  if (samples <= 0 || n_run <= 0) return out;
  int reached = 0;
  for (const Bucket& b : buckets) reached += b.from <= n_run ? 1 : 0;
  if (reached == 0) return out;
  const int per = std::max(1, samples / reached);
  std::mt19937_64 rng(0x6b76617564697400ULL ^ (static_cast<uint64_t>(window) * 0x9e3779b97f4a7c15ULL));
  for (const Bucket& b : buckets) {
    // Context lengths [from, min(to, n_run)] are positions [from - 1, min(to, n_run) - 1].
    const int lo = b.from - 1, hi = std::min(b.to, n_run) - 1;
    if (lo > hi) continue;
    const int size = hi - lo + 1;
    if (size <= per) {
      for (int p = lo; p <= hi; ++p) out.push_back(p);
      continue;
    }
    // Floyd's sampling of `per` distinct offsets; own integer draw (std distributions differ
    // between standard libraries).
    std::vector<int> pick;
    for (int j = size - per; j < size; ++j) {
      const int t = static_cast<int>(rng() % static_cast<uint64_t>(j + 1));
      pick.push_back(std::find(pick.begin(), pick.end(), t) == pick.end() ? t : j);
    }
    for (int o : pick) out.push_back(lo + o);
  }
  std::sort(out.begin(), out.end());
  return out;
}

AttentionDiagnosis::AttentionDiagnosis(const ModelConfig& config, KvCache& baseline, std::vector<KvCache*> shadows,
                                       std::vector<Bucket> buckets, int samples_per_window)
    : n_layers_(config.n_layers),
      n_heads_(config.n_heads),
      n_kv_(config.n_kv_heads),
      hd_(config.head_dim),
      shapes_(config),
      baseline_(baseline),
      shadows_(std::move(shadows)),
      buckets_(std::move(buckets)),
      samples_(samples_per_window) {
  KV_CHECK(!shadows_.empty() && !buckets_.empty() && n_heads_ % n_kv_ == 0);
  cells_.assign(shadows_.size(), std::vector<AttnCell>(static_cast<size_t>(n_layers_) * n_kv_ * buckets_.size()));
}

void AttentionDiagnosis::BeginWindow(int window, int n_run) {
  sampled_ = SampleQueryPositions(n_run, buckets_, samples_, window);
  for (auto& c : cells_) std::fill(c.begin(), c.end(), AttnCell{});
}

std::vector<std::vector<AttnCell>> AttentionDiagnosis::TakeWindow() {
  std::vector<std::vector<AttnCell>> out = cells_;
  for (auto& c : cells_) std::fill(c.begin(), c.end(), AttnCell{});
  return out;
}

void AttentionDiagnosis::Append(int layer, int pos0, int n, const float* k, const float* k_pre_rope, const float* v) {
  baseline_.Append(layer, pos0, n, k, k_pre_rope, v);
  for (KvCache* s : shadows_) s->Append(layer, pos0, n, k, k_pre_rope, v);
}

void AttentionDiagnosis::Reset() {
  baseline_.Reset();
  for (KvCache* s : shadows_) s->Reset();
}

Status AttentionDiagnosis::Reserve(int n_positions) {
  KV_RETURN_IF_ERROR(baseline_.Reserve(n_positions));
  for (KvCache* s : shadows_) KV_RETURN_IF_ERROR(s->Reserve(n_positions));
  return Status::Ok();
}

void AttentionDiagnosis::Attend(int layer, int pos0, int n, const float* q, float* out, ThreadPool& pool) {
  baseline_.Attend(layer, pos0, n, q, out, pool);
  const auto lo = std::lower_bound(sampled_.begin(), sampled_.end(), pos0);
  const auto hi = std::lower_bound(lo, sampled_.end(), pos0 + n);
  const int n_s = static_cast<int>(hi - lo);
  if (n_s == 0) return;
  const int64_t qd = static_cast<int64_t>(n_heads_) * hd_;
  const size_t n_cfg = shadows_.size();
  cfg_out_.resize(n_cfg * n_s * qd);
  // Each shadow attends decode-style at every sampled position: the query sees exactly the rows
  // a query at that position reads, whatever else the shadow holds.
  for (size_t c = 0; c < n_cfg; ++c) {
    for (int i = 0; i < n_s; ++i) {
      const int p = lo[i];
      shadows_[c]->Attend(layer, p, 1, q + (p - pos0) * qd, cfg_out_.data() + (c * n_s + i) * qd, pool);
    }
  }
  if (scratch_.size() < static_cast<size_t>(pool.size())) scratch_.resize(pool.size());
  // One item per (configuration, KV head): each owns its cells and walks the samples in
  // ascending order, so the sums do not depend on the thread count.
  pool.ForEachItem(static_cast<int>(n_cfg) * n_kv_, [&](int item, int thread) {
    const size_t c = static_cast<size_t>(item / n_kv_);
    const int g = item % n_kv_;
    for (int i = 0; i < n_s; ++i) {
      const int p = lo[i];
      Compare(c, layer, g, p, q + (p - pos0) * qd, out + (p - pos0) * qd, cfg_out_.data() + (c * n_s + i) * qd,
              scratch_[thread]);
    }
  });
}

void AttentionDiagnosis::Compare(size_t config, int layer, int g, int p, const float* q, const float* base_out,
                                 const float* cfg_out, Scratch& sc) {
  const AttnShape& shape = shapes_[layer];
  const int first = FirstKey(shape, p), len = p + 1 - first;
  const int b = BucketIndex(buckets_, p + 1);
  if (b < 0) return;
  const size_t rows = static_cast<size_t>(len) * hd_;
  sc.bk.resize(rows), sc.bv.resize(rows), sc.ck.resize(rows), sc.cv.resize(rows);
  sc.s.resize(len), sc.sh.resize(len);
  KV_CHECK_MSG(baseline_.ReadRows(layer, g, p, first, p + 1, sc.bk.data(), sc.bv.data()),
               "the baseline cache cannot expose its rows for the attention diagnosis");
  KV_CHECK_MSG(shadows_[config]->ReadRows(layer, g, p, first, p + 1, sc.ck.data(), sc.cv.data()),
               "a configuration's cache cannot expose its rows for the attention diagnosis");
  AttnCell& cell = cells_[config][AttnIndex(layer, g, b, n_kv_, static_cast<int>(buckets_.size()))];
  for (size_t i = 0; i < rows; ++i) {
    const double dk = static_cast<double>(sc.ck[i]) - sc.bk[i], dv = static_cast<double>(sc.cv[i]) - sc.bv[i];
    cell.k_err2 += dk * dk, cell.k_ref2 += static_cast<double>(sc.bk[i]) * sc.bk[i];
    cell.v_err2 += dv * dv, cell.v_ref2 += static_cast<double>(sc.bv[i]) * sc.bv[i];
  }
  const int G = n_heads_ / n_kv_;
  const double scale = shape.scale, cap = shape.softcap;
  for (int j = 0; j < G; ++j) {
    const int head = g * G + j;
    const float* qh = q + static_cast<int64_t>(head) * hd_;
    // Attention weights in double from the rows each side reads (the baseline's query for both):
    // a = softmax(q·k·scale), â = softmax(q·k̂·scale), each score softcapped where the model does,
    // a sink logit (gpt-oss) in both denominators.
    const double sink = shape.sinks ? shape.sinks[head] : -INFINITY;
    double m = sink, mh = sink;
    for (int t = 0; t < len; ++t) {
      double s = 0, sh = 0;
      for (int d = 0; d < hd_; ++d) {
        s += static_cast<double>(qh[d]) * sc.bk[static_cast<size_t>(t) * hd_ + d];
        sh += static_cast<double>(qh[d]) * sc.ck[static_cast<size_t>(t) * hd_ + d];
      }
      sc.s[t] = s * scale, sc.sh[t] = sh * scale;
      if (cap > 0) sc.s[t] = std::tanh(sc.s[t] / cap) * cap, sc.sh[t] = std::tanh(sc.sh[t] / cap) * cap;
      m = std::max(m, sc.s[t]), mh = std::max(mh, sc.sh[t]);
    }
    double z = std::exp(sink - m), zh = std::exp(sink - mh);
    for (int t = 0; t < len; ++t) z += std::exp(sc.s[t] - m), zh += std::exp(sc.sh[t] - mh);
    const double lse = m + std::log(z), lseh = mh + std::log(zh);
    double kl = 0, tv = 0;
    for (int t = 0; t < len; ++t) {
      const double la = sc.s[t] - lse, lah = sc.sh[t] - lseh, a = std::exp(la), ah = std::exp(lah);
      kl += a * (la - lah);
      tv += std::fabs(a - ah);
    }
    cell.kl += std::max(0.0, kl), cell.tv += 0.5 * tv;
    if (first == 0) {
      const double a0 = std::exp(sc.s[0] - lse), ah0 = std::exp(sc.sh[0] - lseh);
      cell.sink += a0, cell.sink_moved += std::fabs(ah0 - a0);
    }
    const float* o = base_out + static_cast<int64_t>(head) * hd_;
    const float* oh = cfg_out + static_cast<int64_t>(head) * hd_;
    for (int d = 0; d < hd_; ++d) {
      const double e = static_cast<double>(oh[d]) - o[d];
      cell.out_err2 += e * e, cell.out_ref2 += static_cast<double>(o[d]) * o[d];
    }
    cell.queries += 1;
  }
}

}  // namespace kvaudit

#include "eval/attention_stats.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"

namespace kvaudit {
namespace {

double Rel(double err2, double ref2) { return ref2 > 0 ? std::sqrt(err2 / ref2) : 0.0; }

}  // namespace

void AttnCell::Add(const AttnCell& o) {
  k_err2 += o.k_err2, k_ref2 += o.k_ref2, v_err2 += o.v_err2, v_ref2 += o.v_ref2;
  out_err2 += o.out_err2, out_ref2 += o.out_ref2, kl += o.kl, tv += o.tv;
  sink += o.sink, sink_moved += o.sink_moved, queries += o.queries;
}

std::vector<AttnSummary> SummarizeAttention(const std::vector<AttnCell>& cells, int n_layers, int n_kv_heads,
                                            const std::vector<int>& bucket_from) {
  const int n_buckets = static_cast<int>(bucket_from.size());
  KV_CHECK(cells.size() == static_cast<size_t>(n_layers) * n_kv_heads * n_buckets);
  std::vector<AttnSummary> out;
  for (int l = 0; l < n_layers; ++l) {
    for (int h = 0; h < n_kv_heads; ++h) {
      AttnCell all;
      AttnSummary s;
      s.layer = l, s.kv_head = h;
      for (int b = 0; b < n_buckets; ++b) {
        const AttnCell& c = cells[AttnIndex(l, h, b, n_kv_heads, n_buckets)];
        if (c.queries == 0) continue;
        all.Add(c);
        const double q = static_cast<double>(c.queries);
        s.buckets.push_back(
            {b, c.queries, Rel(c.k_err2, c.k_ref2), Rel(c.v_err2, c.v_ref2), c.kl / q, Rel(c.out_err2, c.out_ref2)});
      }
      if (all.queries == 0) continue;
      const double q = static_cast<double>(all.queries);
      s.queries = all.queries;
      s.k_rel_err = Rel(all.k_err2, all.k_ref2), s.v_rel_err = Rel(all.v_err2, all.v_ref2);
      s.attn_kl = all.kl / q, s.attn_tv = all.tv / q, s.out_rel_err = Rel(all.out_err2, all.out_ref2);
      s.sink_mass = all.sink / q, s.sink_moved = all.sink_moved / q;
      const double first = s.buckets.front().out_rel_err;
      for (const AttnSummary::Bucket& b : s.buckets) {
        if (first > 0 && b.out_rel_err >= 2 * first) {
          s.grows_from = bucket_from[static_cast<size_t>(b.bucket)];
          break;
        }
      }
      out.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<AttnSummary> WorstHeads(std::vector<AttnSummary> all, size_t n) {
  std::stable_sort(all.begin(), all.end(),
                   [](const AttnSummary& a, const AttnSummary& b) { return a.out_rel_err > b.out_rel_err; });
  if (all.size() > n) all.resize(n);
  return all;
}

}  // namespace kvaudit

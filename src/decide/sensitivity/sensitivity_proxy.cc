#include "decide/sensitivity/sensitivity_proxy.h"

#include "base/status.h"
#include "decide/sensitivity/rank_correlation.h"

namespace kvaudit {
namespace {

double Quantity(const AttnSummary& a, KvTensor t, ProxyQuantity q) {
  switch (q) {
    case ProxyQuantity::kOutRelErr: return a.out_rel_err;
    case ProxyQuantity::kTensorRelErr: return t == KvTensor::kK ? a.k_rel_err : a.v_rel_err;
    case ProxyQuantity::kAttnKl: return t == KvTensor::kK ? a.attn_kl : 0.0;
    case ProxyQuantity::kAttnTv: return t == KvTensor::kK ? a.attn_tv : 0.0;
  }
  return 0.0;
}

}  // namespace

std::string ProxyQuantityName(ProxyQuantity q) {
  switch (q) {
    case ProxyQuantity::kOutRelErr: return "out_rel_err";
    case ProxyQuantity::kTensorRelErr: return "tensor_rel_err";
    case ProxyQuantity::kAttnKl: return "attn_kl";
    case ProxyQuantity::kAttnTv: return "attn_tv";
  }
  return "";
}

bool ScoresVParts(ProxyQuantity q) { return q == ProxyQuantity::kOutRelErr || q == ProxyQuantity::kTensorRelErr; }

std::vector<double> ProxyScores(const ConfigResult& k_only, const ConfigResult& v_only, int n_layers, ProxyQuantity q) {
  const std::vector<CachePart> parts = AllParts(n_layers);
  std::vector<double> sum(parts.size(), 0.0);  // [n_parts]
  std::vector<int> heads(parts.size(), 0);     // [n_parts] KV heads that saw a sampled query
  for (const ConfigResult* c : {&k_only, &v_only}) {
    const KvTensor t = c == &k_only ? KvTensor::kK : KvTensor::kV;
    for (const AttnSummary& a : c->attention) {
      KV_CHECK(a.layer >= 0 && a.layer < n_layers);
      const size_t i = static_cast<size_t>(2 * a.layer + (t == KvTensor::kV ? 1 : 0));
      sum[i] += Quantity(a, t, q), heads[i] += 1;
    }
  }
  // Every KV head of a layer is sampled at the same positions, so the mean over heads weighs
  // them equally, as the pooled means inside each head weigh their queries.
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = heads[i] ? sum[i] / heads[i] : 0.0;
  return sum;
}

ProxyAgreement MeasureProxy(const std::vector<double>& scores, const std::vector<std::optional<double>>& e2e,
                            ProxyQuantity q) {
  KV_CHECK(scores.size() == e2e.size());
  ProxyAgreement out;
  out.quantity = ProxyQuantityName(q);
  std::vector<double> pa, ea, pk, ek, pv, ev;  // [measured parts] proxy and end-to-end values
  for (size_t i = 0; i < scores.size(); ++i) {
    if (!e2e[i]) continue;
    const bool is_v = i % 2 == 1;
    (is_v ? pv : pk).push_back(scores[i]), (is_v ? ev : ek).push_back(*e2e[i]);
    pa.push_back(scores[i]), ea.push_back(*e2e[i]);
  }
  out.parts = static_cast<int>(pa.size());
  out.k = Spearman(pk, ek);
  if (ScoresVParts(q)) out.all = Spearman(pa, ea), out.v = Spearman(pv, ev);
  return out;
}

}  // namespace kvaudit

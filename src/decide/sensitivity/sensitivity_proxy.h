// The cheap first stage of sensitivity (docs/decision.md "Sensitivity"): a score per cache part
// from the attention diagnosis (eval/attention_diag.h) of two configurations — K quantized
// everywhere, V quantized everywhere — measured in one eval run that shadows the baseline, so it
// needs no forward pass per part. The diagnosis isolates each layer's own error (every layer reads
// the baseline's rows), which is exactly "this part alone quantized", at the attention level.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "decide/sensitivity/sensitivity_specs.h"
#include "eval/report.h"

namespace kvaudit {

// Which diagnosis number scores a part. All are pooled over sampled positions and windows, then
// averaged over the layer's KV heads.
enum class ProxyQuantity {
  kOutRelErr,     // relative error of the attention output: K parts from the K-only run, V from the V-only run
  kTensorRelErr,  // relative error of the stored rows: k_rel_err for K parts, v_rel_err for V parts
  kAttnKl,        // KL of the attention weights; K parts only (V does not move the weights)
  kAttnTv,        // total variation of the attention weights; K parts only
};
inline constexpr ProxyQuantity kAllProxyQuantities[] = {ProxyQuantity::kOutRelErr, ProxyQuantity::kTensorRelErr,
                                                        ProxyQuantity::kAttnKl, ProxyQuantity::kAttnTv};
// The one sensitivity ranks by (chosen by measurement on the bundled model, docs/decision.md):
// defined for K and V parts in the same unit, so one ranking holds both.
inline constexpr ProxyQuantity kProxyQuantity = ProxyQuantity::kOutRelErr;

std::string ProxyQuantityName(ProxyQuantity q);  // "out_rel_err", "tensor_rel_err", "attn_kl", "attn_tv"
bool ScoresVParts(ProxyQuantity q);              // false: the quantity says nothing about V

// Scores of every part (AllParts order) from the K-only and V-only configurations' attention
// summaries (one per layer and KV head). A quantity that does not score V gives V parts 0.
std::vector<double> ProxyScores(const ConfigResult& k_only, const ConfigResult& v_only, int n_layers, ProxyQuantity q);

// How well a quantity predicts the end-to-end one-at-a-time ranking: Spearman's rho over the
// measured parts (all of them, and K and V parts apart). e2e[i]: part i's one-at-a-time mean KLD,
// nullopt when it was not measured.
struct ProxyAgreement {
  std::string quantity;
  std::optional<double> all, k, v;  // nullopt: undefined (fewer than 2 parts, all tied, or V not scored)
  int parts = 0;                    // measured parts in `all`
};
ProxyAgreement MeasureProxy(const std::vector<double>& scores, const std::vector<std::optional<double>>& e2e,
                            ProxyQuantity q);

}  // namespace kvaudit

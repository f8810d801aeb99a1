#include "decide/audit/audit_signatures.h"

#include "run/generation_backend.h"

namespace kvaudit {
namespace {

// Configuration i of the plan's in-process caches (0: the baseline) on the plan's model.
Expected<std::vector<double>> InProcess(const EvalPlan& eval, size_t i, const CacheSignatures& f) {
  KV_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, eval.configs.MakeCache(i, static_cast<int>(f.ids.size())));
  LocalBackend local(*eval.runtime.model, *cache, *eval.runtime.pool);
  return LocalSignature(local, f.ids, f.first);
}

}  // namespace

Expected<std::optional<CacheSignatures>> SignaturesOfConfigs(const EvalPlan& eval) {
  if (eval.windows.empty() || eval.windows[0].size() < 2) return std::optional<CacheSignatures>();
  CacheSignatures f = CacheSignatures::ForWindow(eval.windows[0]);
  const bool weights = eval.runtime.model->has_weights();
  if (const RemoteConfig* b = eval.remote.baseline()) {
    KV_ASSIGN_OR_RETURN(f.logprobs[b->name], RemoteSignature(*b->backend, f.ids, f.first));
  } else if (weights) {
    KV_ASSIGN_OR_RETURN(f.logprobs[eval.info.baseline_spec], InProcess(eval, 0, f));
  }
  for (size_t i = 1; weights && i <= eval.configs.n_configs(); ++i) {
    KV_ASSIGN_OR_RETURN(f.logprobs[eval.configs.config(i).spec()], InProcess(eval, i, f));
  }
  for (const RemoteConfig& c : eval.remote.configs()) {
    KV_ASSIGN_OR_RETURN(f.logprobs[c.name], RemoteSignature(*c.backend, f.ids, f.first));
  }
  return std::optional<CacheSignatures>(std::move(f));
}

}  // namespace kvaudit

#include "job/job_runtime.h"

namespace kvaudit {

bool AllRemote(const KvConfigOptions& kv, const RemoteConfigOptions& remote) {
  return !remote.baseline_endpoint.empty() && kv.kv.empty();
}

Expected<ModelRuntime> LoadJobRuntime(const std::string& model, int threads, const KvConfigOptions& kv,
                               const RemoteConfigOptions& remote) {
  const bool weights = !AllRemote(kv, remote);
  auto runtime = ModelRuntime::Load(model, threads, weights);
  if (runtime || !weights || runtime.error().code != ErrorCode::kBadInput) return runtime;
  // The full load failed: if the files hold a config and a tokenizer, the user pointed an
  // in-process run at a tokenizer-only model; say what needs the weights.
  if (!Model::LoadForTokenizing(model)) return runtime;
  const std::string what =
      !kv.kv.empty() ? "--kv " + kv.kv.front() : "the baseline " + kv.baseline + " (no --baseline-endpoint)";
  return BadInput(model + ": " + what + " runs in-process and needs the weights, which did not load (" +
                  runtime.error().message.substr(0, runtime.error().message.find("; hint:")) +
                  "); hint: pass the model with its weights, or make every configuration an endpoint "
                  "(--baseline-endpoint and --endpoint, no --kv)");
}

}  // namespace kvaudit

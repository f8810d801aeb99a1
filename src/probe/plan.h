// `kvaudit probe` as a library, part 1 (docs/probes.md): options become a validated plan.
// In the order the user's mistakes are cheapest to report: the options, the custom probe file
// (every malformed line listed), the model, the chat template, every --kv spec, then the probe
// instances are generated. Nothing has run when a plan exists; probe/session.h runs it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "endpoint/remote_configs.h"
#include "tokenizer/chat_template.h"
#include "probe/custom.h"
#include "probe/instance.h"
#include "job/job_options.h"
#include "run/model_runtime.h"
#include "run/kv_configs.h"
#include "run/run_clock.h"
#include "run/shard.h"

namespace kvaudit {

// Families with variants, then those without; "custom" runs the --custom file.
inline const std::vector<std::string> kProbeFamilies = {"needle", "exact", "constraint", "variance", "drift", "custom"};
inline const std::vector<std::string> kDefaultProbeFamilies = {"needle", "exact", "constraint", "variance", "drift"};

struct ProbeOptions : JobOptions {
  ProbeOptions() { out = "kvaudit-probe"; }
  // Deployed servers (docs/endpoints.md): --baseline-endpoint replaces kv.baseline, each
  // --endpoint is a configuration after the --kv ones. At least one configuration in all.
  RemoteConfigOptions remote;
  // Empty: the default families, or only the custom probes when `custom` is given. A custom file
  // given with --family runs besides the named families.
  std::vector<std::string> families;
  // Empty: each family's default variants; {"all"}: every variant of the selected families. Each
  // value must belong to a selected family.
  std::vector<std::string> variants;
  std::vector<int> lengths;  // empty: 512..4096 below the model's context
  std::vector<int> depths;   // empty: each family's default depths
  int n = 1;                 // instances per cell
  int samples = 5;           // variance: samples per prompt
  int variance_tokens = 48, drift_tokens = 64;
  float temperature = 0.8f;  // variance: sampling temperature
  uint64_t probe_seed = 1;   // the generated prompts and needle values
  uint64_t seed = 1;         // sampling: variance sample k (1..K) uses seed + k - 1
  std::string needle_value = "rotate";
  std::string custom;         // JSONL file of custom probes; "" = none
  std::string chat = "auto";  // auto (the model's template), none, chatml, llama3, mistral, mistral-v3
};

// The variants a family runs by default ({} for a family without variants: variance, drift, custom).
std::vector<std::string> DefaultVariants(const std::string& family);

// A variance or drift prompt: BOS, then haystack lines to exactly `length` tokens.
struct FreePrompt {
  std::string id;
  int length = 0;
  std::vector<int32_t> prompt;
};

// Whether the selected families read the haystack (--data): every family but custom does; custom
// probes bring their own prompts, so a custom-only run needs no documents. Errors as ProbePlan::Make
// reports them for --family/--custom.
Expected<bool> NeedsHaystack(const ProbeOptions& options);

struct ProbePlan {
  static Expected<ProbePlan> Make(ProbeOptions options);

  ProbeOptions options;
  RunClock clock;  // started when planning began
  ModelRuntime runtime;
  const Tokenizer* tokenizer = nullptr;
  ChatFormat chat = ChatFormat::kNone;
  KvConfigs configs;
  RemoteConfigs remote;                  // connected; empty without --endpoint/--baseline-endpoint
  std::vector<std::string> notes;        // what the run leaves out and why (results.json "notes")
  std::vector<ProbeInstance> instances;  // the checked families (needle, exact, constraint), then custom
  std::vector<FreePrompt> variance, drift;
  int max_positions = 0;        // the caches' size: the longest prompt plus its budget
  std::string model_hash;       // hex, run/fingerprint.h IdentifyModel: results.json and the fingerprint
  std::string model_hash_kind;  // "weights", or "config+tokenizer" when all-remote (no weights loaded)
  nlohmann::json fingerprint;   // what DIR/progress.jsonl must carry to be resumed

  // The baseline and every configuration are endpoints: no weights, no cache, no forward pass here.
  bool all_remote() const { return remote.baseline() && configs.n_configs() == 0; }

 private:
  ProbePlan(ProbeOptions o, ModelRuntime e, KvConfigs c, RemoteConfigs r)
      : options(std::move(o)), runtime(std::move(e)), configs(std::move(c)), remote(std::move(r)) {}
  nlohmann::json MakeFingerprint(const std::vector<CustomProbe>& custom) const;
};

}  // namespace kvaudit

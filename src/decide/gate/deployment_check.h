// `kvaudit gate --endpoint URL --results AUDIT` (docs/decision.md "Does the deployment run what was
// audited?"): the server is asked for the audit's signature sequence (decide/gate/cache_signature.h)
// and its numbers matched against every configuration the audit recorded. It passes when they are
// nearest the configuration to deploy — the audit's choice, or --config — and that configuration
// passed the audit's policy; otherwise one line names what it runs and what was audited.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "decide/gate/cache_signature.h"
#include "endpoint/remote_configs.h"
#include "endpoint/server_report.h"

namespace kvaudit {

struct DeploymentCheckOptions {
  std::vector<std::string> results;  // --results: one audit directory
  std::string config;                // --config: what the server should run; "": the audit's deploy choice
  std::string model;                 // --model: the tokenizer; "": the model the audit recorded
  RemoteConfigOptions remote;        // endpoints: the servers to check (--endpoint, repeatable)
};

struct DeploymentCheck {
  std::string endpoint;          // NAME=URL as given
  std::string expected;          // the configuration it should run
  bool expected_passed = false;  // in the audit, under its policy
  SignatureMatch match;
  size_t positions = 0;
  std::optional<ServerCacheReport> reported;  // what the server says it runs, where it says (vLLM, kvaudit serve)
  bool pass = false;
  std::string line;  // one line, what the CLI prints
};

// One check per --endpoint. BadInput for inputs that cannot be checked: not one audit directory, an
// audit without signatures, a --config it did not measure, nothing to deploy and no --config,
// a server that cannot be reached or whose tokenizer differs.
Expected<std::vector<DeploymentCheck>> CheckDeployments(const DeploymentCheckOptions& options);

}  // namespace kvaudit

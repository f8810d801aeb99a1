// The model a probe or eval job loads (docs/endpoints.md): when the baseline and
// every configuration are endpoints, nothing runs in-process, so only the config and the tokenizer
// are read (a 70B deployment audited from a laptop); otherwise every weight, as always.
#pragma once

#include <string>

#include "base/status.h"
#include "endpoint/remote_configs.h"
#include "run/model_runtime.h"
#include "run/kv_configs.h"

namespace kvaudit {

// --baseline-endpoint given and no --kv: every configuration is remote.
bool AllRemote(const KvConfigOptions& kv, const RemoteConfigOptions& remote);

// ModelRuntime::Load without weights when AllRemote, with them otherwise. A model without weights (a
// directory with config.json and tokenizer.json only) given to a job that must compute in-process
// is one line naming what needs the weights.
Expected<ModelRuntime> LoadJobRuntime(const std::string& model, int threads, const KvConfigOptions& kv,
                               const RemoteConfigOptions& remote);

}  // namespace kvaudit

// The signatures an audit records (decide/gate/cache_signature.h), so that `gate --endpoint`
// can tell later which of its configurations a deployed server runs: the baseline and every
// configuration under test, over the eval's first window, in process or through the server that
// ran it.
#pragma once

#include <optional>

#include "base/status.h"
#include "decide/gate/cache_signature.h"
#include "eval/session.h"

namespace kvaudit {

// Each configuration of the plan by its results name; the baseline when it can run (a server, or
// an in-process baseline with the weights loaded; not a frozen --reference alone). nullopt for a
// plan without windows.
Expected<std::optional<CacheSignatures>> SignaturesOfConfigs(const EvalPlan& eval);

}  // namespace kvaudit

// `audit --serve-cmd` (docs/endpoints.md "Servers kvaudit starts"): the baseline and every
// configuration under test run by the engine's own server, one per configuration, started from
// the user's template before anything is planned, and judged through their APIs like --endpoint
// configurations. Each is named by its spec as the target runs it (under --target llama.cpp,
// engine=llama.cpp: llama-server's defaults, rotation included; under --target native for a
// kvaudit serve), so results, gate and deploy lines read as for an in-process audit, and its bytes
// per token are the spec's.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "decide/audit/audit.h"

namespace kvaudit {

// The values of a configuration's {k} and {v}: its K and V formats, as llama.cpp's -ctk/-ctv and
// vLLM's --kv-cache-dtype spell them. BadInput (naming `origin`) for a spec a template cannot
// pass: per-layer or per-head overrides, or any key beside k, v and engine=.
Expected<std::pair<std::string, std::string>> ServeValuesOf(const CacheConfig& config, const std::string& origin);

// With o->serve_cmd: one server per configuration (o->kv.baseline, then each of o->kv.kv, already
// as the target runs them), spawned together and each waited for; o->kv.kv is emptied and
// o->remote names the servers (the baseline as --baseline-endpoint, the rest as --endpoint, each
// named by its spec). Logs go to o->out/servers/. *served: the configurations, in --kv order.
// Without serve_cmd: nothing. Errors leave no server running.
Expected<std::vector<std::unique_ptr<LaunchedServer>>> LaunchServedConfigs(AuditOptions* o,
                                                                           std::vector<CacheConfig>* served);

// Each server's own report of its cache (endpoint/server_report.h) into the configurations measured
// through it (the eval's remote configurations, in order), and where the configuration is known
// (--serve-cmd), whether the report contradicts it: vLLM's cache_dtype against {k} (its "fp8" is
// fp8_e4m3), kvaudit serve's spec against the formats named.
void ReadServerReports(const RemoteConfigs& remote, std::vector<AuditConfig>* configs);

}  // namespace kvaudit

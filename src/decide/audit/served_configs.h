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

// A configuration's name as a file name: every character but [A-Za-z0-9._-] becomes '_'.
std::string LogName(const std::string& spec);

// out/servers, created: where every server kvaudit starts writes its log.
Expected<std::string> ServerLogDir(const std::string& out);

// One server for `config` from the template's words: {port} a free loopback port, {k}/{v} its
// formats (ServeValuesOf), {name} its spec; its log logs/<LogName(spec)>.log. Spawned, not ready.
Expected<std::unique_ptr<LaunchedServer>> SpawnServedConfig(const std::vector<std::string>& words,
                                                            const CacheConfig& config,
                                                            const std::pair<std::string, std::string>& kv,
                                                            const std::string& logs, double ready_timeout_s);

// The sentence saying how a server's report of its cache contradicts `config`, or "": vLLM's
// cache_dtype against K (its "fp8" is fp8_e4m3), kvaudit serve's spec against the formats named.
std::string Contradiction(const ServerCacheReport& report, const CacheConfig& config);

// Each server's own report of its cache (endpoint/server_report.h) into the configurations measured
// through it (the eval's remote configurations, in order), and where the configuration is known
// (--serve-cmd), whether the report contradicts it: vLLM's cache_dtype against {k} (its "fp8" is
// fp8_e4m3), kvaudit serve's spec against the formats named.
void ReadServerReports(const RemoteConfigs& remote, std::vector<AuditConfig>* configs);

}  // namespace kvaudit

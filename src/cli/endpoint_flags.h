// The flags of a job that compares deployed servers (docs/endpoints.md): --endpoint NAME=URL
// (repeatable), --baseline-endpoint [NAME=]URL, --dialect, --api-key-env, --api-key-file,
// --request-timeout, --retries, --parallel. Declared once, for probe and eval; and the flags of a
// job that starts the servers itself.
#pragma once

#include "endpoint/remote_configs.h"

namespace CLI {
class App;
}  // namespace CLI

namespace kvaudit::cli {

void AddEndpointFlags(CLI::App& app, RemoteConfigOptions& remote);

// --serve-cmd TEMPLATE (`what` it starts servers for, e.g. "the baseline and each --kv") and
// --serve-timeout SECONDS (endpoint/server_launch.h): audit's and recommend's.
void AddServeCmdFlags(CLI::App& app, std::string& serve_cmd, double& timeout_s, const std::string& what);

}  // namespace kvaudit::cli

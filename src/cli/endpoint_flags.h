// The flags of a job that compares deployed servers (docs/endpoints.md): --endpoint NAME=URL
// (repeatable), --baseline-endpoint [NAME=]URL, --dialect, --api-key-env, --api-key-file,
// --request-timeout, --retries, --parallel. Declared once, for probe and eval.
#pragma once

#include "endpoint/remote_configs.h"

namespace CLI {
class App;
}  // namespace CLI

namespace kvaudit::cli {

void AddEndpointFlags(CLI::App& app, RemoteConfigOptions& remote);

}  // namespace kvaudit::cli

// The flags of a job that compares deployed servers (docs/endpoints.md): --endpoint NAME=URL
// (repeatable), --baseline-endpoint [NAME=]URL, --dialect, --api-key-env, --api-key-file,
// --request-timeout, --retries. Declared once, for probe now and eval after it.
#pragma once

#include "endpoint/remote_configs.h"

namespace CLI {
class App;
}  // namespace CLI

namespace kvaudit::cli {

void AddEndpointFlags(CLI::App& app, RemoteConfigOptions& remote);

}  // namespace kvaudit::cli

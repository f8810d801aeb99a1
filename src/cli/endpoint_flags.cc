#include "cli/endpoint_flags.h"

#include <CLI/CLI.hpp>

namespace kvaudit::cli {

void AddEndpointFlags(CLI::App& app, RemoteConfigOptions& r) {
  app.add_option("--endpoint", r.endpoints,
                 "a deployed OpenAI-compatible server as one more configuration, NAME=http://HOST:PORT; repeatable");
  app.add_option("--baseline-endpoint", r.baseline_endpoint,
                 "a deployed server as the baseline instead of the in-process --baseline, [NAME=]http://HOST:PORT");
  app.add_option("--dialect", r.dialect, "the endpoints' server: auto (detected), kvaudit, vllm, llama-server, openai")
      ->capture_default_str();
  app.add_option("--api-key-env", r.api_key.env_name,
                 "environment variable holding the endpoints' API key (default KVAUDIT_API_KEY; unset = no key)");
  app.add_option("--api-key-file", r.api_key.file, "file whose first line is the API key (never on the command line)");
  app.add_option("--request-timeout", r.http.timeout_s, "seconds one request attempt to an endpoint may take")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--parallel", r.parallel,
                 "probe instances or eval windows sent at once when the baseline and every configuration are endpoints")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--retries", r.http.max_attempts, "attempts per request to an endpoint (5xx, resets, timeouts)")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));
}

void AddServeCmdFlags(CLI::App& app, std::string& serve_cmd, double& timeout_s, const std::string& what) {
  app.add_option("--serve-cmd", serve_cmd,
                 "start the engine's own server for " + what +
                     " from this template, e.g. 'llama-server -m M.gguf --port {port} -ctk {k} -ctv {v} -fa on' "
                     "(placeholders {port} {k} {v} {name}; docs/endpoints.md)");
  app.add_option("--serve-timeout", timeout_s, "seconds each --serve-cmd server may take to be ready")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
}

}  // namespace kvaudit::cli

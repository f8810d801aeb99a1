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

}  // namespace kvaudit::cli

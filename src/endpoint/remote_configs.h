// The remote configurations of a job (docs/endpoints.md), as run/kv_configs.h is
// for in-process ones: `--baseline-endpoint [NAME=]URL` replaces the in-process baseline and each
// `--endpoint NAME=URL` is one more configuration after the --kv ones. All are connected (dialect
// detected, served model read) and the local tokenizer is checked against each server's
// /tokenize before anything runs, so a wrong address or a different tokenizer is one line at once.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "endpoint/api_key.h"
#include "endpoint/http_client.h"
#include "endpoint/remote_backend.h"
#include "tokenizer/tokenizer.h"

namespace kvaudit {

struct RemoteConfigOptions {
  std::vector<std::string> endpoints;  // --endpoint NAME=URL, in command-line order
  std::string baseline_endpoint;       // --baseline-endpoint [NAME=]URL; "" = the in-process baseline
  std::string dialect = "auto";        // --dialect: auto, kvaudit, vllm, llama-server, openai
  ApiKeySource api_key;                // --api-key-env / --api-key-file
  HttpOptions http;                    // --request-timeout, --retries
  // --parallel: units of work (probe instances, eval windows) sent at once when every part of the
  // run is an endpoint; results do not depend on it (journaled in order).
  int parallel = 1;
  // Names the job gives instead of NAME= (servers kvaudit started: named by the configuration they
  // run, which NAME= cannot spell): [endpoints] or empty, and the baseline's ("" = its own).
  std::vector<std::string> endpoint_names;
  std::string baseline_name;
  bool empty() const { return endpoints.empty() && baseline_endpoint.empty(); }
};

struct RemoteConfig {
  std::string name;  // the configuration's name in results (its spec)
  std::unique_ptr<RemoteBackend> backend;
  TokenizerCheck tokenizer_check;
  // {name, url, dialect, detection, served_model, ids_from, tokenizer_check}: results.json's
  // "endpoint" object of this configuration.
  nlohmann::json Describe() const;
};

class RemoteConfigs {
 public:
  // Nothing to connect when options.empty(). tokenizer_samples: texts the job will send (a few of
  // its prompts), tokenized here and by each server that has /tokenize.
  static Expected<RemoteConfigs> Connect(const RemoteConfigOptions& options, const Tokenizer& tokenizer,
                                         std::span<const std::string> tokenizer_samples);

  // Null when the baseline runs in-process.
  RemoteConfig* baseline() { return baseline_.get(); }
  const RemoteConfig* baseline() const { return baseline_.get(); }
  std::vector<RemoteConfig>& configs() { return configs_; }
  const std::vector<RemoteConfig>& configs() const { return configs_; }
  // Whether any remote configuration takes part (every one lacks full logits).
  bool any() const { return baseline_ || !configs_.empty(); }
  // The baseline (when remote), then the configurations.
  std::vector<const RemoteConfig*> all() const;
  // What a resumable run's results depend on: each endpoint's name, dialect and served model, not
  // its address, so a server restarted on another port resumes its run (docs/endpoints.md).
  nlohmann::json Fingerprint() const;

 private:
  std::unique_ptr<RemoteConfig> baseline_;
  std::vector<RemoteConfig> configs_;
};

}  // namespace kvaudit

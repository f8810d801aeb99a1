// What a server says about its own KV cache, where it says anything, read from its Prometheus
// /metrics once when a job connects (results.json's endpoint.reported_cache):
// - vLLM: `vllm:cache_config_info{...,cache_dtype="fp8",calculate_kv_scales="False",...} 1.0`, a
//   gauge whose labels are the engine's CacheConfig fields (vllm-project/vllm:
//   vllm/v1/metrics/loggers.py@005a810b, PrometheusStatLogger.log_engine_initialized);
// - kvaudit serve: `kvaudit_cache_config_info{kv="SPEC"} 1` (serve/server.cc);
// - llama-server reports no cache type (not in /props, /slots or /metrics at de3ff815), so
//   nothing; `gate --endpoint` tells its cache by measurement (decide/gate/cache_signature.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "endpoint/http_client.h"

namespace kvaudit {

struct ServerCacheReport {
  std::string metric;                         // the metric it came from
  std::string cache;                          // vLLM's cache_dtype, kvaudit serve's kv spec
  std::map<std::string, std::string> labels;  // every label of that metric, as the server wrote it
  nlohmann::json ToJson() const;
};

// The first cache report in an exposition text; nullopt when it has none.
std::optional<ServerCacheReport> ParseCacheReport(std::string_view metrics_text);
// GET /metrics (one attempt) and ParseCacheReport; nullopt when the server offers neither.
std::optional<ServerCacheReport> ReadCacheReport(const HttpClient& client);

}  // namespace kvaudit

#include "decide/audit/served_configs.h"

#include <filesystem>
#include <map>

#include "kv/formats/format_table.h"
#include "run/kv_configs.h"
#include "run/run_dir.h"

namespace kvaudit {

std::string LogName(const std::string& spec) {
  std::string out = spec;
  for (char& c : out) {
    const bool plain =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!plain) c = '_';
  }
  return out;
}

std::string Contradiction(const ServerCacheReport& report, const CacheConfig& config) {
  const KvSettings& d = config.defaults();
  if (!d.k || !d.v) return "";
  const std::string k(KvFormatName(*d.k)), v(KvFormatName(*d.v));
  if (report.metric == "kvaudit_cache_config_info") {
    const std::string named = CacheConfig::Uniform(d).spec();
    return report.cache == named ? "" : "the server reports kv=" + report.cache + ", not " + named;
  }
  const std::string dtype = report.cache == "fp8" ? "fp8_e4m3" : report.cache;  // vLLM's fp8 on CUDA
  if (k != v || dtype == k) return "";
  return "the server reports cache_dtype=" + report.cache + ", not " + k;
}

void ReadServerReports(const RemoteConfigs& remote, std::vector<AuditConfig>* configs) {
  size_t next = 0;  // the remote configurations follow the in-process ones, in order
  for (AuditConfig& c : *configs) {
    if (c.endpoint.is_null() || next >= remote.configs().size()) continue;
    c.reported = ReadCacheReport(remote.configs()[next++].backend->client());
    if (c.reported && c.config) c.reported_differs = Contradiction(*c.reported, *c.config);
  }
}

Expected<std::pair<std::string, std::string>> ServeValuesOf(const CacheConfig& config, const std::string& origin) {
  KvSettings kv;
  kv.k = config.defaults().k, kv.v = config.defaults().v;
  if (config.HasOverrides() || !(config.defaults() == kv) || !kv.k || !kv.v) {
    return BadInput(origin + " " + config.spec() +
                    ": --serve-cmd passes one K and one V format to the server ({k}, {v}), and this spec sets "
                    "more; hint: use a plain k=FORMAT,v=FORMAT, or start that server yourself and give --endpoint");
  }
  return std::pair{std::string(KvFormatName(*kv.k)), std::string(KvFormatName(*kv.v))};
}

Expected<std::string> ServerLogDir(const std::string& out) {
  const std::string logs = SubDir(out, "servers");
  std::error_code ec;
  std::filesystem::create_directories(logs, ec);
  if (ec) return BadInput(logs + ": cannot create the servers' log directory: " + ec.message());
  return logs;
}

Expected<std::unique_ptr<LaunchedServer>> SpawnServedConfig(const std::vector<std::string>& words,
                                                            const CacheConfig& config,
                                                            const std::pair<std::string, std::string>& kv,
                                                            const std::string& logs, double ready_timeout_s) {
  KV_ASSIGN_OR_RETURN(const int port, FreeLoopbackPort());
  const std::map<std::string, std::string> values = {
      {"port", std::to_string(port)}, {"k", kv.first}, {"v", kv.second}, {"name", config.spec()}};
  LaunchOptions l;
  KV_ASSIGN_OR_RETURN(l.argv, FillServeCommand(words, values, "--serve-cmd"));
  l.name = config.spec(), l.port = port, l.ready_timeout_s = ready_timeout_s;
  l.log_path = SubDir(logs, LogName(config.spec()) + ".log");
  return LaunchedServer::Spawn(l);
}

Expected<std::vector<std::unique_ptr<LaunchedServer>>> LaunchServedConfigs(AuditOptions* o,
                                                                           std::vector<CacheConfig>* served) {
  std::vector<std::unique_ptr<LaunchedServer>> servers;
  if (o->serve_cmd.empty()) return servers;
  if (!o->remote.empty() || !o->reference.empty()) {
    return BadInput(
        "--serve-cmd starts the baseline's and every configuration's server itself; hint: drop "
        "--endpoint, --baseline-endpoint and --reference, or --serve-cmd");
  }
  KV_ASSIGN_OR_RETURN(const std::vector<std::string> words, SplitServeCommand(o->serve_cmd, "--serve-cmd"));
  KV_ASSIGN_OR_RETURN(const std::vector<CacheConfig> parsed, ParseKvArguments(o->kv));  // the baseline first
  std::vector<std::pair<CacheConfig, std::string>> configs;  // [1 + n_configs] with the flag each came from
  for (size_t i = 0; i < parsed.size(); ++i)
    configs.emplace_back(parsed[i], i == 0 ? o->kv.baseline_flag : o->kv.FlagOf(o->kv.kv[i - 1]));
  std::vector<std::pair<std::string, std::string>> kv;  // [1 + n_configs] {k} and {v}, all checked before any start
  for (const auto& [config, origin] : configs) {
    KV_ASSIGN_OR_RETURN(auto values, ServeValuesOf(config, origin));
    kv.push_back(std::move(values));
  }
  KV_ASSIGN_OR_RETURN(const std::string logs, ServerLogDir(o->out));
  for (size_t i = 0; i < configs.size(); ++i) {
    KV_ASSIGN_OR_RETURN(std::unique_ptr<LaunchedServer> s,
                        SpawnServedConfig(words, configs[i].first, kv[i], logs, o->serve_timeout_s));
    servers.push_back(std::move(s));
  }
  for (const std::unique_ptr<LaunchedServer>& s : servers) KV_RETURN_IF_ERROR(s->WaitReady());
  o->remote.baseline_endpoint = servers[0]->url(), o->remote.baseline_name = configs[0].first.spec();
  served->clear();
  for (size_t i = 1; i < servers.size(); ++i) {
    o->remote.endpoints.push_back(servers[i]->url());
    o->remote.endpoint_names.push_back(configs[i].first.spec());
    served->push_back(configs[i].first);
  }
  o->kv.kv.clear();
  return servers;
}

}  // namespace kvaudit

#include "endpoint/remote_configs.h"

#include <cstdlib>
#include <set>

#include "endpoint/dialect.h"
#include "endpoint/endpoint_spec.h"

namespace kvaudit {
namespace {

Expected<RemoteConfig> ConnectOne(const std::string& text, const std::string& name, const char* flag,
                                  std::optional<Dialect> dialect, const std::string& key, const HttpOptions& http,
                                  const Tokenizer& tokenizer, std::span<const std::string> samples) {
  KV_ASSIGN_OR_RETURN(EndpointSpec spec, ParseEndpointSpec(text, flag));
  RemoteConfig c;
  c.name = name.empty() ? spec.name : name;
  KV_ASSIGN_OR_RETURN(c.backend, RemoteBackend::Connect(std::move(spec), key, http, dialect, tokenizer));
  KV_ASSIGN_OR_RETURN(c.tokenizer_check, c.backend->CheckTokenizer(tokenizer, samples));
  return c;
}

}  // namespace

nlohmann::json RemoteConfig::Describe() const {
  const Capabilities& caps = backend->capabilities();
  nlohmann::json check = {{"checked", tokenizer_check.checked},
                          {"samples", tokenizer_check.samples},
                          {"tokens", tokenizer_check.tokens},
                          {"note", tokenizer_check.note}};
  return {{"name", name},
          {"url", backend->client().spec().origin() + backend->client().spec().base_path},
          {"dialect", DialectName(backend->dialect())},
          {"detection", backend->detection()},
          {"served_model", backend->model_id()},
          {"ids_from", caps.ids_from.empty() ? "text" : caps.ids_from},
          {"ids_retokenized", backend->ids_retokenized()},
          {"tokenizer_check", check}};
}

Expected<RemoteConfigs> RemoteConfigs::Connect(const RemoteConfigOptions& o, const Tokenizer& tokenizer,
                                               std::span<const std::string> samples) {
  RemoteConfigs out;
  if (o.empty()) return out;
  KV_ASSIGN_OR_RETURN(const std::optional<Dialect> dialect, ParseDialectFlag(o.dialect));
  KV_ASSIGN_OR_RETURN(const std::string key, LoadApiKey(o.api_key, [](const char* n) { return std::getenv(n); }));
  std::set<std::string> names;
  if (!o.baseline_endpoint.empty()) {
    KV_ASSIGN_OR_RETURN(RemoteConfig b, ConnectOne(o.baseline_endpoint, o.baseline_name, "--baseline-endpoint", dialect,
                                                   key, o.http, tokenizer, samples));
    names.insert(b.name);
    out.baseline_ = std::make_unique<RemoteConfig>(std::move(b));
  }
  for (size_t i = 0; i < o.endpoints.size(); ++i) {
    const std::string& e = o.endpoints[i];
    const std::string name = i < o.endpoint_names.size() ? o.endpoint_names[i] : "";
    KV_ASSIGN_OR_RETURN(RemoteConfig c, ConnectOne(e, name, "--endpoint", dialect, key, o.http, tokenizer, samples));
    if (!names.insert(c.name).second) {
      return BadInput("--endpoint " + e + " repeats the name " + c.name +
                      "; hint: name each endpoint once, e.g. --endpoint q4=http://127.0.0.1:8001");
    }
    out.configs_.push_back(std::move(c));
  }
  return out;
}

std::vector<const RemoteConfig*> RemoteConfigs::all() const {
  std::vector<const RemoteConfig*> out;
  if (baseline_) out.push_back(baseline_.get());
  for (const RemoteConfig& c : configs_) out.push_back(&c);
  return out;
}

nlohmann::json RemoteConfigs::Fingerprint() const {
  auto one = [](const RemoteConfig& c) {
    return nlohmann::json{
        {"name", c.name}, {"dialect", DialectName(c.backend->dialect())}, {"served_model", c.backend->model_id()}};
  };
  nlohmann::json fp = {{"baseline", baseline_ ? one(*baseline_) : nlohmann::json(nullptr)},
                       {"configs", nlohmann::json::array()}};
  for (const RemoteConfig& c : configs_) fp["configs"].push_back(one(c));
  return fp;
}

}  // namespace kvaudit

#include "probe/run_info_json.h"

namespace kvaudit {

nlohmann::json ProbeRunInfoToJson(const ProbeRunInfo& i) {
  return {{"model", i.model},
          {"baseline_spec", i.baseline_spec},
          {"data", i.data},
          {"model_hash", i.model_hash},
          {"specs", i.specs},
          {"bytes_per_token", i.bytes_per_token},
          {"endpoints", i.endpoints},
          {"baseline_endpoint", i.baseline_endpoint},
          {"notes", i.notes},
          {"probe_seed", i.probe_seed},
          {"sampling_seed", i.sampling_seed},
          {"instances", i.instances},
          {"threads", i.threads},
          {"chat_format", i.chat_format}};
}

Expected<ProbeRunInfo> ProbeRunInfoFromJson(const nlohmann::json& j) {
  ProbeRunInfo i;
  try {  // nlohmann's accessors throw on a wrong shape; caught here so nothing crosses the module
    j.at("model").get_to(i.model), j.at("baseline_spec").get_to(i.baseline_spec), j.at("data").get_to(i.data);
    j.at("model_hash").get_to(i.model_hash), j.at("specs").get_to(i.specs);
    j.at("bytes_per_token").get_to(i.bytes_per_token);
    for (const auto& e : j.at("endpoints")) i.endpoints.push_back(e);
    i.baseline_endpoint = j.at("baseline_endpoint");
    j.at("notes").get_to(i.notes), j.at("probe_seed").get_to(i.probe_seed);
    j.at("sampling_seed").get_to(i.sampling_seed), j.at("instances").get_to(i.instances);
    j.at("threads").get_to(i.threads), j.at("chat_format").get_to(i.chat_format);
  } catch (const nlohmann::json::exception& e) {
    return BadInput(std::string("malformed probe run info: ") + e.what());
  }
  if (i.specs.size() != i.bytes_per_token.size() || i.specs.size() != i.endpoints.size()) {
    return BadInput("malformed probe run info: specs, bytes_per_token and endpoints differ in length");
  }
  return i;
}

}  // namespace kvaudit

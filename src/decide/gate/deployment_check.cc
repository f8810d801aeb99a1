#include "decide/gate/deployment_check.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "base/text_columns.h"
#include "model/model.h"

namespace kvaudit {
namespace {

using nlohmann::json;

struct AuditRecord {
  CacheSignatures signatures;
  std::string deploy, model, policy;
  std::map<std::string, bool> passed;  // by configuration
  std::set<std::string> served;        // the configurations measured through a server
};

Expected<AuditRecord> ReadAudit(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "results.json").string();
  std::ifstream in(path);
  const json j = json::parse(in, nullptr, false);
  if (!j.is_object() || j.value("kind", "") != "audit")
    return BadInput("gate --endpoint: " + path +
                    " is not an audit's results; hint: --results takes the --out of "
                    "kvaudit audit");
  if (!j.contains("signatures") || j["signatures"].is_null())
    return BadInput("gate --endpoint: " + path + " records no signatures; hint: rerun the audit with this kvaudit");
  AuditRecord r;
  KV_ASSIGN_OR_RETURN(r.signatures, CacheSignatures::FromJson(j["signatures"], path));
  r.deploy = j.value("deploy", json()).is_string() ? j["deploy"].get<std::string>() : "";
  r.model = j.value("model", std::string());
  r.policy = j.value("policy", std::string());
  for (const json& c : j.value("configs", json::array())) {
    r.passed[c.value("spec", "")] = c.value("pass", false);
    if (c.contains("endpoint") && !c["endpoint"].is_null()) r.served.insert(c.value("spec", ""));
  }
  return r;
}

std::string Distance(double d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", d);
  return buf;
}

// Whether the live numbers single out the nearest configuration: at most a quarter of the
// distance to the next one (the same engine and configuration give 0; another cache type on the
// bundled model 0.026 and more).
bool SingledOut(const SignatureMatch& m) {
  return m.runner_up.empty() ? m.nearest_distance == 0 : m.nearest_distance <= 0.25 * m.runner_up_distance;
}

// The check's line: what the server's numbers match, against what should run.
std::string CheckLine(const DeploymentCheck& c, const std::string& policy, bool served) {
  const SignatureMatch& m = c.match;
  const std::string head = "deployment " + c.endpoint + ": ";
  const std::string over = " over " + std::to_string(c.positions) + " positions";
  const std::string expected_away = Distance(m.expected_distance.value_or(0));
  if (!SingledOut(m)) {
    return head + "FAIL: its log-probabilities match none of the audit's configurations (nearest " + m.nearest +
           " at " + Distance(m.nearest_distance) + ", then " + m.runner_up + " at " + Distance(m.runner_up_distance) +
           over + "); the audited " + c.expected + " is " + expected_away + " away" +
           (served ? ""
                   : "; hint: the audit computed it in process, close to the engine's numbers but not the same "
                     "(docs/decision.md): audit through the engine (--serve-cmd or --endpoint) for a signature "
                     "it reproduces");
  }
  if (m.nearest != c.expected) {
    return head + "FAIL: its log-probabilities match " + m.nearest + " (mean |d logprob| " +
           Distance(m.nearest_distance) + over + "), not the audited " + c.expected + " (" + expected_away + " away)";
  }
  const std::string other =
      m.runner_up.empty() ? "" : "; the nearest other, " + m.runner_up + ", at " + Distance(m.runner_up_distance);
  const std::string match =
      "its log-probabilities match it (mean |d logprob| " + Distance(m.nearest_distance) + over + other + ")";
  if (!c.expected_passed)
    return head + "FAIL: runs " + c.expected + " as audited, which fails policy " + policy + "; " + match;
  return head + "runs " + c.expected + " as audited: " + match;
}

}  // namespace

Expected<std::vector<DeploymentCheck>> CheckDeployments(const DeploymentCheckOptions& o) {
  if (o.results.size() != 1)
    return BadInput("gate --endpoint checks a deployment against one audit; hint: give one --results AUDIT_DIR");
  KV_ASSIGN_OR_RETURN(const AuditRecord audit, ReadAudit(o.results[0]));
  const std::string expected = o.config.empty() ? audit.deploy : o.config;
  if (expected.empty())
    return BadInput("gate --endpoint: the audit in " + o.results[0] +
                    " found no configuration to deploy; hint: name the one the server should run with --config");
  if (!audit.signatures.logprobs.contains(expected)) {
    std::vector<std::string> names;
    for (const auto& [name, lp] : audit.signatures.logprobs) names.push_back(name);
    return BadInput("gate --endpoint: --config " + expected + " is not a configuration of the audit in " +
                    o.results[0] + "; hint: one of " + JoinWith(names, ", "));
  }
  KV_ASSIGN_OR_RETURN(const std::unique_ptr<Model> model,
                      Model::LoadForTokenizing(o.model.empty() ? audit.model : o.model));
  if (!model->tokenizer())
    return BadInput("gate --endpoint: " + audit.model + " has no tokenizer; hint: pass --model with one");
  KV_ASSIGN_OR_RETURN(RemoteConfigs servers, RemoteConfigs::Connect(o.remote, *model->tokenizer(), {}));
  std::vector<DeploymentCheck> out;
  const CacheSignatures& f = audit.signatures;
  for (size_t i = 0; i < servers.configs().size(); ++i) {
    DeploymentCheck c;
    c.endpoint = o.remote.endpoints[i], c.expected = expected;
    // Not among the configurations judged: the baseline, the reference itself.
    c.expected_passed = audit.passed.contains(expected) ? audit.passed.at(expected) : true;
    KV_ASSIGN_OR_RETURN(const std::vector<double> live, RemoteSignature(*servers.configs()[i].backend, f.ids, f.first));
    c.positions = live.size();
    c.match = MatchSignature(f, live, expected);
    c.pass = SingledOut(c.match) && c.match.nearest == expected && c.expected_passed;
    c.line = CheckLine(c, audit.policy, audit.served.contains(expected));
    c.reported = ReadCacheReport(servers.configs()[i].backend->client());
    if (c.reported) c.line += " [the server reports " + c.reported->cache + " (" + c.reported->metric + ")]";
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace kvaudit

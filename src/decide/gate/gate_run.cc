#include "decide/gate/gate_run.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "decide/gate/gate_inputs.h"
#include "decide/gate/gate_markdown.h"
#include "decide/gate/junit.h"
#include "decide/acceptance/policy.h"
#include "run/run_dir.h"

namespace kvaudit {
namespace {

// An output file's directory must exist: a typo there is the user's, not a disk failure.
Status CheckWritable(const std::string& flag, const std::string& path) {
  if (path.empty()) return Status::Ok();
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (dir.empty() || std::filesystem::is_directory(dir, ec)) return Status::Ok();
  return BadInput(flag + " " + path + ": the directory " + dir.string() + " does not exist; hint: create it first");
}

// What an audit directory recorded of its judgment: the policy's name and TOML, and the context
// it judged up to.
struct RecordedPolicy {
  std::string name, text;
  int target_context = 0;
};

// Without --policy: the policy every --results directory recorded as an audit, when they all
// recorded the same one; else BadInput saying why, with the flag as the hint.
Expected<RecordedPolicy> PolicyRecordedBy(const std::vector<std::string>& dirs) {
  std::optional<RecordedPolicy> out;
  for (const std::string& dir : dirs) {
    const std::string path = (std::filesystem::path(dir) / "results.json").string();
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    const bool audit = j.is_object() && j.value("kind", "") == "audit";
    if (!audit || !j.contains("policy_text") || !j["policy_text"].is_string() || !j["policy"].is_string()) {
      return BadInput(
          "gate --results " + dir + " without --policy: " +
          (audit ? "this audit predates recording its policy" : "only an audit directory records its policy") +
          "; hint: pass --policy (strict, balanced, relative or a TOML file)");
    }
    RecordedPolicy r{j["policy"].get<std::string>(), j["policy_text"].get<std::string>(), j.value("target_context", 0)};
    if (out && (out->text != r.text || out->target_context != r.target_context)) {
      return BadInput("gate --results: the audits " + dirs.front() + " and " + dir +
                      " were judged by different policies; hint: pass --policy to judge them by one");
    }
    out = std::move(r);
  }
  KV_CHECK(out.has_value());
  return *out;
}

}  // namespace

Expected<GateReport> RunGate(const GateOptions& o) {
  KV_RETURN_IF_ERROR(CheckWritable("--junit", o.junit));
  KV_RETURN_IF_ERROR(CheckWritable("--markdown", o.markdown));
  if (o.results.empty())
    return BadInput("gate needs --results; hint: pass the --out directory of kvaudit eval or probe");
  std::optional<RecordedPolicy> recorded;
  AcceptancePolicy policy;
  if (o.policy.empty()) {
    KV_ASSIGN_OR_RETURN(recorded, PolicyRecordedBy(o.results));
    KV_ASSIGN_OR_RETURN(policy, ParsePolicy(recorded->text, "the policy " + o.results.front() + " recorded"));
    policy.name = recorded->name;
  } else {
    KV_ASSIGN_OR_RETURN(policy, LoadPolicy(o.policy));
  }
  KV_ASSIGN_OR_RETURN(const GateInputs inputs, LoadGateInputs(o.results));
  ModelHashes model;
  if (!o.model.empty()) {
    KV_ASSIGN_OR_RETURN(model, ModelHashesOf(o.model, inputs));
  }
  KV_RETURN_IF_ERROR(CheckOneModel(inputs, model, o.model));
  KV_ASSIGN_OR_RETURN(GateReport report, EvaluateGate(policy, inputs));
  // As the audit judged: up to its target context where the policy names none (decide/audit).
  if (recorded && !report.target_context && recorded->target_context > 0)
    report.target_context = recorded->target_context;
  if (!o.junit.empty()) KV_RETURN_IF_ERROR(WriteFileAtomically(o.junit, GateJunitXml(report)));
  if (!o.markdown.empty()) KV_RETURN_IF_ERROR(WriteFileAtomically(o.markdown, GateMarkdown(report)));
  return report;
}

}  // namespace kvaudit

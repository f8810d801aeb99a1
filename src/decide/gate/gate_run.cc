#include "decide/gate/gate_run.h"

#include <filesystem>

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

}  // namespace

Expected<GateReport> RunGate(const GateOptions& o) {
  KV_RETURN_IF_ERROR(CheckWritable("--junit", o.junit));
  KV_RETURN_IF_ERROR(CheckWritable("--markdown", o.markdown));
  KV_ASSIGN_OR_RETURN(const AcceptancePolicy policy, LoadPolicy(o.policy));
  KV_ASSIGN_OR_RETURN(const GateInputs inputs, LoadGateInputs(o.results));
  ModelHashes model;
  if (!o.model.empty()) {
    KV_ASSIGN_OR_RETURN(model, ModelHashesOf(o.model, inputs));
  }
  KV_RETURN_IF_ERROR(CheckOneModel(inputs, model, o.model));
  KV_ASSIGN_OR_RETURN(GateReport report, EvaluateGate(policy, inputs));
  if (!o.junit.empty()) KV_RETURN_IF_ERROR(WriteFileAtomically(o.junit, GateJunitXml(report)));
  if (!o.markdown.empty()) KV_RETURN_IF_ERROR(WriteFileAtomically(o.markdown, GateMarkdown(report)));
  return report;
}

}  // namespace kvaudit

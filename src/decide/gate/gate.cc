#include "decide/gate/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "decide/gate/gate_fidelity.h"
#include "decide/gate/gate_probes.h"
#include "eval/reference_file.h"

namespace kvaudit {
namespace {

using gate_cases::ConfigInputs;
using gate_cases::FidelityCases;
using gate_cases::ProbeCases;

ConfigInputs& Slot(std::vector<ConfigInputs>& all, const std::string& spec) {
  for (ConfigInputs& c : all) {
    if (c.spec == spec) return c;
  }
  all.push_back({spec});
  return all.back();
}

// Adds every configuration of one job's files (eval or probe) to `all`; a configuration in two
// files of the same job is ambiguous.
template <class Input, class Config>
Status AddJob(const std::vector<Input>& files, const char* job, const Config* ConfigInputs::*result,
              const Input* ConfigInputs::*file, std::vector<ConfigInputs>* all) {
  for (const Input& f : files) {
    for (const Config& c : f.configs) {
      ConfigInputs& s = Slot(*all, c.spec);
      if (s.*result) {
        return BadInput(c.spec + " has " + job + " results in two files, " + (s.*file)->path + " and " + f.path +
                        "; hint: pass one --results per configuration and job");
      }
      s.*result = &c, s.*file = &f;
    }
  }
  return Status::Ok();
}

// Every configuration in the order the results list it; one eval and one probe result at most each.
Expected<std::vector<ConfigInputs>> Configurations(const GateInputs& in) {
  std::vector<ConfigInputs> all;
  KV_RETURN_IF_ERROR(AddJob(in.evals, "eval", &ConfigInputs::eval, &ConfigInputs::eval_file, &all));
  KV_RETURN_IF_ERROR(AddJob(in.probes, "probe", &ConfigInputs::probe, &ConfigInputs::probe_file, &all));
  if (all.empty()) return BadInput("the results hold no configuration; hint: run eval or probe with --kv SPEC");
  return all;
}

// Eval and probe compare against a baseline; results against different baselines do not add up.
Status CheckBaselines(const GateInputs& in) {
  std::string first, first_path;
  auto check = [&](std::string baseline, const std::string& path) -> Status {
    // A frozen baseline (eval --reference: "reference SPEC") is that baseline.
    if (baseline.starts_with(kReferenceBaselinePrefix)) baseline.erase(0, kReferenceBaselinePrefix.size());
    if (baseline.empty()) return Status::Ok();
    if (first.empty()) first = baseline, first_path = path;
    if (baseline == first) return Status::Ok();
    return BadInput("the results compare against different baselines (" + first + " in " + first_path + ", " +
                    baseline + " in " + path + "); hint: run eval and probe with the same --baseline");
  };
  for (const EvalInput& e : in.evals) KV_RETURN_IF_ERROR(check(e.baseline, e.path));
  for (const ProbeInput& p : in.probes) KV_RETURN_IF_ERROR(check(p.baseline, p.path));
  return Status::Ok();
}

Status CheckAlpha(const AcceptancePolicy& policy, const GateInputs& in) {
  if (!policy.alpha) return Status::Ok();
  for (const ProbeInput& p : in.probes) {
    if (std::fabs(p.alpha - *policy.alpha) <= 1e-12) continue;
    return BadInput("probes.alpha = " + GateNumber(*policy.alpha) + " in " + policy.name +
                    " but the probe run used alpha " + GateNumber(p.alpha) + ", " + p.path +
                    "; hint: probe's verdicts are at alpha " + GateNumber(p.alpha) + ": set alpha to that, or drop it");
  }
  return Status::Ok();
}

bool HasFidelityCriteria(const AcceptancePolicy& p) {
  return p.fidelity.any() || p.relative_to ||
         std::any_of(p.ranges.begin(), p.ranges.end(), [](const FidelityRange& r) { return r.limits.any(); });
}

Expected<ConfigVerdict> Judge(const AcceptancePolicy& policy, const ConfigInputs& in, const ConfigInputs* ref) {
  ConfigVerdict v;
  v.config = in.spec;
  if (HasFidelityCriteria(policy)) {
    if (!in.eval && in.probe->endpoint) {  // a server's name, not a --kv spec
      return BadInput(in.spec + " was probed through an endpoint and has no eval results (only " + in.probe_file->path +
                      ") but the policy has fidelity criteria; hint: judge its probes with a policy without "
                      "[fidelity] (docs/decision.md), or measure fidelity with kvaudit eval --endpoint against a "
                      "server that returns prompt logprobs (docs/endpoints.md)");
    }
    if (!in.eval) {
      return BadInput(in.spec + " has no eval results (only " + in.probe_file->path +
                      ") but the policy has fidelity "
                      "criteria; hint: run kvaudit eval --kv " +
                      in.spec + " --out DIR and pass --results DIR");
    }
    KV_RETURN_IF_ERROR(FidelityCases(policy, in, ref, &v));
  }
  KV_RETURN_IF_ERROR(ProbeCases(policy, in, ref, &v));
  for (const CaseOutcome o : {CaseOutcome::kFail, CaseOutcome::kInconclusive}) {
    for (size_t i = 0; i < v.cases.size() && !v.first_failure; ++i) {
      if (v.cases[i].outcome == o) v.first_failure = i;
    }
    if (v.first_failure) break;
  }
  v.outcome = v.first_failure ? v.cases[*v.first_failure].outcome : CaseOutcome::kPass;
  v.pass = std::all_of(v.cases.begin(), v.cases.end(), [](const GateCase& c) { return c.pass; });
  return v;
}

// relative_to's configuration among the results: the one with its spec, else, where the policy's
// spec writes no engine=, the one configuration storing the same cache under another engine (a
// target measures "k=q8_0,v=q8_0" as "k=q8_0,v=q8_0,engine=llama.cpp"). Results name
// configurations by canonical spec, so the candidates are the reference's spec under each engine.
Expected<const ConfigInputs*> FindReference(const AcceptancePolicy& policy, const std::vector<ConfigInputs>& all) {
  if (!policy.relative_to) return static_cast<const ConfigInputs*>(nullptr);
  const CacheConfig& ref = *policy.relative_to;
  for (const ConfigInputs& c : all) {
    if (c.spec == ref.spec()) return &c;
  }
  std::vector<const ConfigInputs*> same;
  for (const ConfigInputs& c : all) {
    if (ref.attention_written()) break;
    for (const AttentionMode engine : {AttentionMode::kNative, AttentionMode::kLlamaCpp}) {
      if (c.spec == ref.WithAttention(engine).spec()) same.push_back(&c);
    }
  }
  const std::string where = "relative_to = \"" + ref.spec() + "\" (" + policy.relative_to_where + ")";
  if (same.size() > 1) {
    return BadInput(where + " matches " + same[0]->spec + " and " + same[1]->spec +
                    " in the results; hint: write the reference with its engine=, e.g. relative_to = \"" +
                    same[0]->spec + "\"");
  }
  if (same.empty()) {
    return BadInput(where + " is not among the results' configurations; hint: measure it with the others (kvaudit " +
                    "eval and probe --kv " + ref.spec() + "; audit and recommend add it themselves)");
  }
  return same.front();
}

}  // namespace

std::string GateReport::TargetText() const {
  return target_context ? std::to_string(*target_context) + " tokens" : "the longest context measured";
}

const char* OutcomeWord(CaseOutcome o) {
  switch (o) {
    case CaseOutcome::kPass: return "PASS";
    case CaseOutcome::kFail: return "FAIL";
    case CaseOutcome::kInconclusive: return "INCONCLUSIVE";
    case CaseOutcome::kNoSignal: return "NO SIGNAL";
    case CaseOutcome::kWarn: return "WARN";
  }
  return "FAIL";
}

int GateReport::inconclusive() const {
  return static_cast<int>(std::count_if(
      configs.begin(), configs.end(), [](const ConfigVerdict& v) { return v.outcome == CaseOutcome::kInconclusive; }));
}

std::string GateReport::InconclusiveNote() const {
  const int n = inconclusive();
  if (n == 0) return "";
  return std::to_string(n) + (n == 1 ? " configuration is" : " configurations are") +
         " INCONCLUSIVE: an interval straddles its threshold, so the sample cannot tell pass from fail (each such "
         "case says about how many more windows or instances would decide it); policy " +
         policy +
         (inconclusive_fails
              ? " counts that as a failure (inconclusive = \"fail\")"
              : std::string(n == 1 ? " passes it" : " passes them") + " with this warning (inconclusive = \"warn\")");
}

std::string GateReport::LostCustomProbesNote() const {
  return "custom probes lost under a configuration (they pass at baseline); policy " + policy +
         (lost_custom_probe_fails ? " fails the configuration for each (probes.custom.per_probe = \"fail\")"
                                  : " warns (probes.custom.per_probe = \"warn\")");
}

int GateReport::failed() const {
  return static_cast<int>(
      std::count_if(configs.begin(), configs.end(), [](const ConfigVerdict& v) { return !v.pass; }));
}

Expected<GateReport> EvaluateGate(const AcceptancePolicy& policy, const GateInputs& inputs) {
  KV_RETURN_IF_ERROR(CheckBaselines(inputs));
  KV_RETURN_IF_ERROR(CheckAlpha(policy, inputs));
  KV_ASSIGN_OR_RETURN(const std::vector<ConfigInputs> configs, Configurations(inputs));
  GateReport report;
  report.policy = policy.name;
  report.target_context = policy.target_context;
  report.inconclusive_fails = policy.InconclusiveFails();
  report.lost_custom_probe_fails = policy.LostCustomProbeFails();
  for (const EvalInput& e : inputs.evals) report.inputs.push_back(e.path + " (eval)");
  for (const ProbeInput& p : inputs.probes) report.inputs.push_back(p.path + " (probe)");
  KV_ASSIGN_OR_RETURN(const ConfigInputs* ref, FindReference(policy, configs));
  if (ref) report.reference = ref->spec;
  for (const ConfigInputs& c : configs) {
    KV_ASSIGN_OR_RETURN(ConfigVerdict v, Judge(policy, c, ref));
    report.configs.push_back(std::move(v));
  }
  return report;
}

std::string SafeUpToText(const ConfigVerdict& v) {
  if (!v.judged_fidelity) return "not judged";
  if (!v.safe_up_to) return "none";
  if (v.safe_up_to_is_all_measured) return "all measured (>= " + std::to_string(*v.safe_up_to) + ")";
  return std::to_string(*v.safe_up_to);
}

std::string IntervalText(const GateCase& c) {
  return c.interval ? " [" + GateNumber(c.interval->lo) + ", " + GateNumber(c.interval->hi) + "]" : "";
}

std::string GateNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", x);
  return buf;
}

}  // namespace kvaudit

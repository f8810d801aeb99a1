#include "decide/audit/workload.h"

namespace kvaudit {
namespace {

// code: exact tokens matter (identifiers, JSON values, a naming convention declared at the top);
// retrieval: planted facts of every shape at every depth; chat: facts in prose, conventions, and
// how much sampled replies vary. Drift (the model's own greedy path) in every one: it is where a
// cache goes astray in long generations. docs/probes.md describes each family and variant.
const std::vector<Workload>& All() {
  static const std::vector<Workload> all = {
      {"code",
       "strict",
       {"needle", "exact", "constraint", "drift"},
       {"code", "multikey", "identifiers", "json_record", "prefix"},
       "code assistants and agents: exact identifiers, JSON values and conventions (policy strict)"},
      {"retrieval",
       "strict",
       {"needle", "exact", "drift"},
       {"code", "multikey", "prose", "json", "json_record", "number"},
       "RAG and long-document QA: planted facts of every shape at every depth (policy strict)"},
      {"chat",
       "balanced",
       {"needle", "constraint", "variance", "drift"},
       {"prose", "multikey", "prefix"},
       "chat: facts in prose, conventions, the spread of sampled replies (policy balanced)"},
  };
  return all;
}

}  // namespace

const std::vector<std::string>& WorkloadNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const Workload& w : All()) n.push_back(w.name);
    return n;
  }();
  return names;
}

Expected<Workload> WorkloadByName(const std::string& name) {
  for (const Workload& w : All()) {
    if (w.name == name) return w;
  }
  return BadInput("--workload " + name + " is not a workload; hint: use code, retrieval or chat (docs/audit.md)");
}

}  // namespace kvaudit

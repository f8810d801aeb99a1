// `kvaudit recommend --serve-cmd` (docs/endpoints.md "Recommend through servers"): the cheapest
// cache setting the engine itself runs that passes an acceptance policy, found by starting the
// engine's own server for each candidate. The engine's settings are one K and one V type for the
// whole cache (llama.cpp's -ctk/-ctv; vLLM's one --kv-cache-dtype: a template without {v}), so
// the candidates are the grid of --formats pairs, named as the target runs them:
//   1. every pair's bytes per token at the target context (kvaudit's accounting); those over the
//      budget are listed, not measured;
//   2. the rest in ascending bytes (ties: the more precise K first, K being the more sensitive
//      tensor in llama.cpp's and kvaudit's measurements: docs/decision.md), each measured through
//      its own server against one baseline server started once: eval on the windows (against the
//      baseline server's answers, frozen once: eval/reference_job.h), the policy's probe families
//      (against the baseline server), the gate's verdict;
//   3. the first that passes is the recommendation — every cheaper candidate was measured and
//      failed — and the search stops there.
// Bounded: at most --max-servers candidates measured, none started after --search-time; one
// candidate's server runs at a time beside the baseline's (GPU engines take the whole device),
// each stopped as soon as it is measured, every one on any way out (endpoint/server_launch.h).
// DIR/servers/*.log, DIR/baseline.kvref, DIR/candidates/<spec>/{eval,probe}, DIR/results.json (docs/results-schema.md
// "`kvaudit recommend --serve-cmd` results").
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "decide/acceptance/policy.h"
#include "decide/gate/gate.h"
#include "decide/recommend/recommend.h"
#include "decide/search/budget.h"
#include "endpoint/server_report.h"
#include "eval/reference_job.h"
#include "kv/config/cache_config.h"
#include "run/run_clock.h"

namespace kvaudit {

struct ServedCandidate {
  CacheConfig config;  // as the target runs it
  std::string spec;    // config.spec(): what results name it
  std::string k, v;    // the template's {k} and {v}
  uint64_t bytes_per_token = 0;
  // "measured"; or why not: "over the budget", "--max-servers reached", "--search-time reached",
  // "not needed: SPEC passed with fewer bytes" (or "as many"), "its server did not start: WHY".
  std::string state;
  std::string dir;                            // relative to DIR, when measured
  nlohmann::json endpoint;                    // the server as results describe it, when measured
  std::optional<ServerCacheReport> reported;  // what the server says it runs
  std::string reported_differs;               // "" or one sentence
  std::optional<ConfigVerdict> verdict;       // when measured
  double wall_s = 0;                          // its server's start to its stop
};

class ServedSearchPlan {
 public:
  // Everything checked before any server starts: the policy (not one relative to another
  // configuration), the budget (some candidate fits it), the formats under the target, the
  // template and every candidate's {k}/{v}, the windows and the probe families.
  static Expected<ServedSearchPlan> Make(RecommendOptions options);

  RecommendOptions options;
  RunClock clock;
  AcceptancePolicy policy;
  Budget budget;
  uint64_t budget_bytes_per_token = 0, f16_bytes_per_token = 0;
  int target_ctx = 0;
  CacheConfig baseline;                     // as the target runs it
  std::vector<std::string> words;           // the template, split
  std::vector<ServedCandidate> candidates;  // ascending bytes, the search's order
  std::vector<std::string> probe_families;
  std::vector<int> probe_lengths;
  bool one_type = false;  // the template has no {v}: K and V take one type
};

struct ServedSearchResult {
  std::vector<ServedCandidate> candidates;  // the plan's, with what the search found
  std::optional<size_t> recommended;        // the first (cheapest) that passed
  std::string deploy_command;               // the template for it, {port} left for the user
  std::string baseline_log, logs_dir;
  std::optional<ReferenceSummary> reference;  // the baseline's eval answers, frozen once (none measured: none)
  double wall_s = 0, peak_rss_mb = 0;
  std::string results_path;
  nlohmann::json results;
};

Expected<ServedSearchResult> RunServedSearch(ServedSearchPlan& plan);

}  // namespace kvaudit

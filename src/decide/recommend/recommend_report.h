// `kvaudit recommend`'s results.json (docs/results-schema.md "`kvaudit recommend` results") and
// its terminal report: the verified points with their held-out numbers and verdicts, the
// recommendation, the best uniform configuration, and each engine's settings for them.
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "decide/targets/target_settings.h"
#include "decide/recommend/recommend.h"

namespace kvaudit {

Expected<nlohmann::json> RecommendJson(const RecommendResult& r, const RecommendPlan& plan);
std::string RecommendText(const RecommendResult& r, const RecommendPlan& plan);

// One line per engine: its flags when it stores `engines`' spec exactly; otherwise why not, and the
// first of its approximations (closest first) that this run verified and that passed, with the
// settings for it; or, when every one verified failed, that none passes; or the closest one,
// marked "not verified". verdicts: canonical spec -> pass, of every configuration this run judged.
std::string TargetLines(const std::vector<TargetSettings>& targets, const std::string& indent,
                        const std::map<std::string, bool>& verdicts, const ModelConfig& config, int target_ctx);
// The verdicts of a recommendation's verified points, for TargetLines.
std::map<std::string, bool> VerifiedVerdicts(const RecommendResult& r);

// "per-layer", "first/last", "uniform" joined by commas; "engine approximation" for round 3.
std::string ShapesText(const VerifiedPoint& p);
// When nothing under the budget passes, what budget would have (docs/cli.md "recommend"): the
// cheapest verified configuration that passes as a --budget in bytes and as a share of f16 (rounded
// up, so it admits that configuration); or, when none passes at all, that no budget would, with the
// largest one's first failure. "" when the budget found a recommendation. One line, no newline.
std::string BudgetAnswer(const RecommendResult& r);
// The verdict in one line: "PASS", or "FAIL: <first failing case>".
std::string VerdictLine(const ConfigVerdict& v);

}  // namespace kvaudit

// `kvaudit recommend`'s results.json (docs/results-schema.md "`kvaudit recommend` results") and
// its terminal report: the verified points with their held-out numbers and verdicts, the
// recommendation, the best uniform configuration, and each engine's settings for them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "decide/recommend.h"

namespace kvaudit {

Expected<nlohmann::json> RecommendJson(const RecommendResult& r, const RecommendPlan& plan);
std::string RecommendText(const RecommendResult& r, const RecommendPlan& plan);

// "per-layer", "first/last", "uniform" joined by commas.
std::string ShapesText(const std::vector<MixShape>& shapes);
// The verdict in one line: "PASS", or "FAIL: <first failing case>".
std::string VerdictLine(const ConfigVerdict& v);

}  // namespace kvaudit

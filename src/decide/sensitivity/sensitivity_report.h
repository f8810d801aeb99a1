// Writers for `kvaudit sensitivity` results: DIR/results.json (schema: docs/results-schema.md,
// "Sensitivity results") and the terminal table (parts ranked, worst first).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "decide/sensitivity/sensitivity.h"

namespace kvaudit {

// Part indices worst first by one-at-a-time mean KLD (measured parts only); equal values keep
// part order.
std::vector<int> RankOneAtATime(const CandidateResult& c);
// Measured parts whose exclusion helps most first: leave-one-out mean KLD ascending (the part's
// marginal share, all-quantized KLD minus leave-one-out KLD, descending).
std::vector<int> RankLeaveOneOut(const CandidateResult& c);
// Every part by its proxy score, largest first.
std::vector<int> RankProxy(const CandidateResult& c);

nlohmann::json SensitivityJson(const SensitivityResult& r);
std::string SensitivityTable(const SensitivityResult& r);

}  // namespace kvaudit

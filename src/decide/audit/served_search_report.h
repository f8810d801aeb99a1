// `kvaudit recommend --serve-cmd`'s results.json (docs/results-schema.md "`kvaudit recommend
// --serve-cmd` results") and its terminal report: the candidates in the search's order with their
// bytes and verdicts (or why each was not measured), the recommendation and the server command
// that deploys it, or why there is none.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "decide/audit/served_search.h"

namespace kvaudit {

nlohmann::json ServedSearchJson(const ServedSearchResult& r, const ServedSearchPlan& plan);
std::string ServedSearchText(const ServedSearchResult& r, const ServedSearchPlan& plan);

}  // namespace kvaudit

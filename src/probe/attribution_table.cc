#include "probe/attribution_table.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "probe/significance.h"

namespace kvaudit {
namespace {

using nlohmann::json;

// The counts, rates and tests of one row (json objects keep their keys sorted, so merging
// into a row's own keys gives the same bytes in any order).
json AttributionJson(const ProbeAttribution& a) {
  return {{"n", a.n},
          {"baseline_pass", a.baseline_pass_rate},
          {"config_pass", a.config_pass_rate},
          {"both_pass", a.both_pass},
          {"cache_induced", a.cache_induced},
          {"recovered", a.recovered},
          {"both_fail", a.both_fail},
          {"mcnemar_p", a.mcnemar_p},
          {"mcnemar_p_holm", a.mcnemar_p_holm},
          {"significant", a.significant}};
}

}  // namespace

void HolmCorrectPerConfig(std::vector<ProbeRow>& rows) {
  std::map<std::string, std::vector<ProbeAttribution*>> families;  // configuration → its rows
  for (ProbeRow& r : rows) families[r.config].push_back(&r.a);
  for (auto& [config, family] : families) HolmCorrect(family);
}

std::vector<ProbeRow> LengthRows(const std::vector<ProbeRow>& cells) {
  std::map<std::tuple<std::string, std::string, std::string, int>, std::vector<ProbeAttribution>> pooled;
  for (const ProbeRow& r : cells) pooled[{r.family, r.variant, r.config, r.length}].push_back(r.a);
  std::vector<ProbeRow> rows;
  for (const auto& [key, parts] : pooled) {
    const auto& [family, variant, config, length] = key;
    rows.push_back({family, variant, config, length, -1, PoolAttributions(parts)});
  }
  HolmCorrectPerConfig(rows);
  return rows;
}

std::vector<PooledRow> PooledRows(const std::vector<ProbeRow>& cells, const std::vector<std::string>& specs) {
  std::vector<std::string> families;  // first-seen order
  for (const ProbeRow& r : cells) {
    if (std::find(families.begin(), families.end(), r.family) == families.end()) families.push_back(r.family);
  }
  std::vector<PooledRow> out;
  for (const std::string& spec : specs) {
    const size_t first = out.size();
    for (const std::string& family : families) {
      std::vector<ProbeAttribution> parts;
      for (const ProbeRow& r : cells) {
        if (r.config == spec && r.family == family) parts.push_back(r.a);
      }
      if (!parts.empty()) out.push_back({spec, family, static_cast<int>(parts.size()), PoolAttributions(parts)});
    }
    std::vector<ProbeAttribution*> tests;  // Holm over the families of this configuration
    for (size_t i = first; i < out.size(); ++i) tests.push_back(&out[i].a);
    HolmCorrect(tests);
  }
  return out;
}

json CellJson(const ProbeRow& r) {
  json j = AttributionJson(r.a);
  j.update({{"family", r.family},
            {"variant", r.variant},
            {"config", r.config},
            {"length", r.length},
            {"depth", r.depth >= 0 ? json(r.depth) : json(nullptr)}});
  return j;
}

json PooledJson(const PooledRow& r) {
  json j = AttributionJson(r.a);
  j.update({{"config", r.config}, {"family", r.family}, {"cells", r.cells}});
  return j;
}

std::string LengthTable(const std::vector<ProbeRow>& cells) {
  const std::vector<ProbeRow> rows = LengthRows(cells);
  if (rows.empty()) return "";
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-11s %-12s %-26s %6s %4s %7s %7s %5s %5s %5s %8s %8s  %s\n", "family", "variant",
                "config", "length", "n", "base %", "cfg %", "cache", "recov", "model", "p", "adj p", "verdict");
  out += line;
  for (const ProbeRow& r : rows) {
    const ProbeAttribution& a = r.a;
    std::snprintf(line, sizeof(line), "%-11s %-12s %-26s %6d %4lld %7.1f %7.1f %5lld %5lld %5lld %8.3g %8.3g  %s\n",
                  r.family.c_str(), r.variant.c_str(), r.config.c_str(), r.length, static_cast<long long>(a.n),
                  100 * a.baseline_pass_rate, 100 * a.config_pass_rate, static_cast<long long>(a.cache_induced),
                  static_cast<long long>(a.recovered), static_cast<long long>(a.both_fail), a.mcnemar_p,
                  a.mcnemar_p_holm, VerdictWords(a));
    out += line;
  }
  out +=
      "  (cache = cache-induced failures: baseline passes, configuration fails; recov = the reverse;\n"
      "   model = both fail, a model limit; p = exact McNemar on cache vs recov, depths pooled;\n"
      "   adj p = Holm over this table's rows of one configuration with >= 2 discordant pairs;\n"
      "   the verdict follows adj p < 0.05)\n";
  return out;
}

std::string PooledTable(const std::vector<PooledRow>& pooled) {
  if (pooled.empty()) return "";
  std::string out =
      "\npooled per probe family (all its variants, lengths and depths; exact McNemar on the summed counts,\n"
      "Holm over the families of one configuration):\n";
  for (const PooledRow& r : pooled) {
    out += "  " + r.config + " " + r.family + ", " + std::to_string(r.a.n) + " instances: " + DescribeAttribution(r.a) +
           "\n";
  }
  return out;
}

}  // namespace kvaudit

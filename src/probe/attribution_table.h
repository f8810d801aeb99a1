// The attribution rows of `kvaudit probe` and how they are reported (docs/probes.md "Attribution
// and statistics"): per-cell rows, rows pooled over depths for the terminal, and one pooled test
// per configuration × probe family. Schema: docs/probes.md "results.json".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probe/attribution.h"

namespace kvaudit {

// One attribution row per family × variant × configuration × length (× depth for needles).
struct ProbeRow {
  std::string family, variant, config;
  int length = 0, depth = -1;
  ProbeAttribution a;
};

// Holm over the rows of each configuration, across its families and variants (HolmCorrect).
void HolmCorrectPerConfig(std::vector<ProbeRow>& rows);

// The cells pooled over depths (family × variant × configuration × length, depth -1), sorted by
// that key, and Holm-corrected per configuration over these rows.
std::vector<ProbeRow> LengthRows(const std::vector<ProbeRow>& cells);

// One test per configuration × probe family: every instance of the family (all its variants,
// lengths and depths) pooled (PoolAttributions), then Holm over the families of one configuration.
struct PooledRow {
  std::string config, family;
  int cells = 0;  // cells pooled
  ProbeAttribution a;
};
// Configurations in `specs` order, families in first-seen order of `cells`.
std::vector<PooledRow> PooledRows(const std::vector<ProbeRow>& cells, const std::vector<std::string>& specs);

nlohmann::json CellJson(const ProbeRow& r);
nlohmann::json PooledJson(const PooledRow& r);

// The terminal tables: per family × variant × configuration × length, and the pooled tests.
std::string LengthTable(const std::vector<ProbeRow>& cells);
std::string PooledTable(const std::vector<PooledRow>& pooled);

}  // namespace kvaudit

// The probe runner's plain pieces: token-sequence measures on hand-made sequences, the
// attribution rows (family x variant x config x length, depth for needles only), record round
// trips through the journal format, and the journal's resume/refusal behaviour.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "run/jsonl_journal.h"
#include "probe/report.h"
#include "probe/sequences.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

TEST(ProbeSequences, DivergenceEditDistanceRepetition) {
  const std::vector<int32_t> a = {1, 2, 3, 4}, b = {1, 2, 9, 4}, c = {1, 2};
  EXPECT_FALSE(FirstDivergence(a, a).has_value());
  EXPECT_EQ(FirstDivergence(a, b), 2);
  EXPECT_EQ(FirstDivergence(a, c), 2);  // a strict prefix parts at its end
  EXPECT_EQ(TokenEditDistance(a, a), 0);
  EXPECT_EQ(TokenEditDistance(a, b), 1);
  EXPECT_EQ(TokenEditDistance(a, c), 2);
  EXPECT_EQ(TokenEditDistance({}, a), 4);
  EXPECT_EQ(TokenEditDistance(std::vector<int32_t>{1, 2, 3}, std::vector<int32_t>{2, 3, 4}), 2);
  // 1 2 3 4 1 2 3 4: 5 four-grams, the last one (1 2 3 4) repeats the first.
  EXPECT_DOUBLE_EQ(RepeatedNgramShare(std::vector<int32_t>{1, 2, 3, 4, 1, 2, 3, 4}), 1.0 / 5.0);
  EXPECT_DOUBLE_EQ(RepeatedNgramShare(std::vector<int32_t>{7, 7, 7, 7, 7, 7}), 2.0 / 3.0);
  EXPECT_EQ(RepeatedNgramShare(std::vector<int32_t>{1, 2, 3}), 0.0);
  EXPECT_EQ(DistinctCount({a, b, a}), 2);
  EXPECT_DOUBLE_EQ(MeanPairwiseEditDistance({a, b, a}), (1 + 0 + 1) / 3.0);
  EXPECT_EQ(MeanPairwiseEditDistance({a}), 0.0);
}

ProbeRecord Rec(const std::string& family, int length, int depth, bool base, bool cfg1, bool cfg2) {
  ProbeRecord r;
  r.id = family + std::to_string(length) + "/" + std::to_string(depth) + (base ? "b" : "") + (cfg1 ? "1" : "") +
         (cfg2 ? "2" : "");
  r.family = family, r.variant = "v", r.length = length, r.depth = depth, r.expected = "x";
  r.runs = {{base, "b", -1, ""}, {cfg1, "c1", cfg1 ? -1 : 0, cfg1 ? "" : "wrong"}, {cfg2, "c2", -1, ""}};
  return r;
}

TEST(ProbeReport, AttributionRowsPairOutcomesPerCell) {
  std::vector<ProbeRecord> recs;
  // needle at 512/depth 0: 5 instances, baseline passes all, config 1 fails 4, config 2 passes all.
  for (int i = 0; i < 5; ++i) recs.push_back(Rec("needle", 512, 0, true, i == 0, true));
  recs.push_back(Rec("needle", 512, 50, false, false, true));  // another depth: its own row
  recs.push_back(Rec("exact", 512, 10, true, true, true));     // depth is not a key outside needles
  recs.push_back(Rec("exact", 512, 50, false, false, false));
  const auto rows = AttributionRows(recs, {"q4", "q8"});
  ASSERT_EQ(rows.size(), 6u);  // needle: 2 depths x 2 configs; exact: 1 row x 2 configs
  const ProbeRow& r = rows[0];
  EXPECT_EQ(r.family, "needle");
  EXPECT_EQ(r.config, "q4");
  EXPECT_EQ(r.length, 512);
  EXPECT_EQ(r.depth, 0);
  EXPECT_EQ(r.a.n, 5);
  EXPECT_EQ(r.a.both_pass, 1);
  EXPECT_EQ(r.a.cache_induced, 4);
  EXPECT_EQ(r.a.recovered, 0);
  EXPECT_DOUBLE_EQ(r.a.mcnemar_p, 0.125);  // 2 * (1/2)^4
  EXPECT_FALSE(r.a.significant);
  for (const ProbeRow& x : rows) {
    if (x.family == "exact") {
      EXPECT_EQ(x.depth, -1);
      EXPECT_EQ(x.a.n, 2);
      EXPECT_EQ(x.a.both_fail, 1);
    }
    if (x.family == "needle" && x.depth == 50 && x.config == "q8") {
      EXPECT_EQ(x.a.recovered, 1);
    }
  }
  ProbeRunInfo info;
  info.specs = {"q4", "q8"}, info.bytes_per_token = {1, 2};
  const nlohmann::json j = ProbeResultsJson(info, recs, {}, {});
  EXPECT_EQ(j["schema_version"], 2);
  ASSERT_EQ(j["probes"].size(), 6u);
  for (const char* key :
       {"family", "variant", "config", "length", "depth", "n", "baseline_pass", "config_pass", "both_pass",
        "cache_induced", "recovered", "both_fail", "mcnemar_p", "mcnemar_p_holm", "significant"}) {
    EXPECT_TRUE(j["probes"][0].contains(key)) << key;
  }
  // q4's needle cells: 4/0 at depth 0 (p = 0.125) is its only testable cell, so Holm leaves it.
  EXPECT_DOUBLE_EQ(j["probes"][0]["mcnemar_p_holm"].get<double>(), 0.125);
  // Pooled per configuration × family: q4 needle, q4 exact, q8 needle, q8 exact.
  ASSERT_EQ(j["pooled"].size(), 4u);
  EXPECT_EQ(j["pooled"][0]["config"], "q4");
  EXPECT_EQ(j["pooled"][0]["family"], "needle");
  EXPECT_EQ(j["pooled"][0]["cells"], 2);
  EXPECT_EQ(j["pooled"][0]["n"], 6);
  EXPECT_EQ(j["pooled"][0]["cache_induced"], 4);
  EXPECT_DOUBLE_EQ(j["pooled"][0]["mcnemar_p"].get<double>(), 0.125);
  EXPECT_TRUE(j["probes"][4]["depth"].is_null());
  EXPECT_EQ(j["worst_cases"].size(), 4u);  // the four cache-induced needle failures under q4
  const std::string table = ProbeResultsTable(info, recs, {}, {});
  EXPECT_NE(table.find("not significant"), std::string::npos);
  EXPECT_NE(table.find("  q4 needle, 6 instances: 4 cache-induced failures, 0 recoveries: not significant"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("5/1!"), std::string::npos);  // grid cell: baseline passes 5, configuration 1
}

TEST(ProbeReport, RecordsRoundTrip) {
  const ProbeRecord p = Rec("needle", 1024, 25, true, false, true);
  auto back = ProbeRecordFromJson(nlohmann::json::parse(ToJson(p).dump()), 3);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->id, p.id);
  EXPECT_EQ(back->depth, 25);
  EXPECT_EQ(back->runs[1].detail, "wrong");
  EXPECT_FALSE(ProbeRecordFromJson(ToJson(p), 2).has_value());  // another number of caches
  VarianceRecord v{"variance/free/L512/i0", 512, {{{1, 2}, {1, 3}}, {{1, 2}, {4}}}};
  auto vb = VarianceRecordFromJson(ToJson(v), 2);
  ASSERT_TRUE(vb.has_value());
  EXPECT_EQ(vb->samples, v.samples);
  DriftRecord d{"drift/free/L512/i0", 512, {{1, 2, 3}, {1, 2, 4}}, {0.5}, {1.5}};
  auto db = DriftRecordFromJson(ToJson(d), 2);
  ASSERT_TRUE(db.has_value());
  EXPECT_EQ(db->outputs, d.outputs);
  EXPECT_EQ(db->kl_max, d.kl_max);
  ProbeRunInfo info;
  info.specs = {"q4"}, info.bytes_per_token = {1};
  const auto j = ProbeResultsJson(info, {}, {*vb}, {*db});
  ASSERT_EQ(j["variance"].size(), 1u);
  EXPECT_EQ(j["variance"][0]["identical_pairs"], 1);
  EXPECT_EQ(j["variance"][0]["first_divergence_mean"], 0.0);
  ASSERT_EQ(j["drift"].size(), 1u);
  EXPECT_EQ(j["drift"][0]["first_divergence_mean"], 2.0);
  EXPECT_EQ(j["drift"][0]["edit_distance_mean"], 1.0);
}

TEST(JsonlJournal, ResumesCutsTornLineAndRefusesAnotherRun) {
  const auto dir = testing::MakeTempDir("journal");
  const std::string path = (dir / "p.jsonl").string();
  const nlohmann::json fp = {{"model", "a"}, {"seed", 1}};
  std::vector<nlohmann::json> lines;
  {
    auto j = JsonlJournal::Open(path, "kvaudit_test", fp, "unit", &lines);
    ASSERT_TRUE(j.ok());
    EXPECT_TRUE(lines.empty());
    ASSERT_TRUE((*j)->Append({{"id", "x"}}).ok());
    ASSERT_TRUE((*j)->Append({{"id", "y"}}).ok());
  }
  { std::ofstream(path, std::ios::app) << "{\"id\": \"z\""; }  // killed mid-write
  {
    auto j = JsonlJournal::Open(path, "kvaudit_test", fp, "unit", &lines);
    ASSERT_TRUE(j.ok());
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[1]["id"], "y");
    ASSERT_TRUE((*j)->Append({{"id", "z"}}).ok());
  }
  auto again = JsonlJournal::Open(path, "kvaudit_test", fp, "unit", &lines);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(lines.size(), 3u);
  auto other = JsonlJournal::Open(path, "kvaudit_test", {{"model", "b"}, {"seed", 1}}, "unit", &lines);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().exit_code(), 2);
  EXPECT_NE(other.error().message.find("model changed"), std::string::npos) << other.error().message;
  auto wrong_kind = JsonlJournal::Open(path, "kvaudit_other", fp, "unit", &lines);
  EXPECT_FALSE(wrong_kind.ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit

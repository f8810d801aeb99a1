// The job skeleton (src/job/job_run.h): which units a run owns, the order of its files (a refused
// rerun writes nothing), the journal header of a shard, and shard.json as `kvaudit merge` reads it.
#include "job/job_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "run/provenance.h"
#include "run/shard.h"
#include "support/fixtures.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;

const JobKind kTestJob{"eval", "kvaudit_eval_progress", "window"};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

JobOptions OptionsFor(const fs::path& dir, ShardSpec shard = {}) {
  JobOptions o;
  o.out = dir.string();
  o.shard = shard;
  return o;
}

TEST(JobRun, AShardOwnsTheUnitsShardUnitsGivesIt) {
  std::mt19937 rng(7);
  std::vector<int64_t> costs(23);  // [n_units]
  for (int64_t& c : costs) c = static_cast<int64_t>(rng() % 1000);
  const fs::path root = testing::MakeTempDir("job-units");
  std::vector<nlohmann::json> lines;
  auto whole = JobRun::Open(kTestJob, OptionsFor(root / "whole"), {{"x", 1}}, costs, &lines);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(whole->owned(), std::vector<uint8_t>(costs.size(), 1));
  for (int n = 1; n <= 5; ++n) {
    std::vector<int> times_owned(costs.size(), 0);
    for (int i = 0; i < n; ++i) {
      const fs::path dir = root / (std::to_string(i) + "of" + std::to_string(n));
      auto run = JobRun::Open(kTestJob, OptionsFor(dir, {i, n}), {{"x", 1}}, costs, &lines);
      ASSERT_TRUE(run.ok()) << run.error().message;
      const std::vector<size_t> want = ShardUnits(costs, i, n);
      EXPECT_EQ(run->owned_units(), std::vector<int64_t>(want.begin(), want.end())) << i << "/" << n;
      for (int64_t u : run->owned_units()) ++times_owned[static_cast<size_t>(u)];
    }
    EXPECT_EQ(times_owned, std::vector<int>(costs.size(), 1)) << "every unit in exactly one of " << n << " shards";
  }
  fs::remove_all(root);
}

TEST(JobRun, AShardWritesTheManifestMergeReads) {
  const fs::path dir = testing::MakeTempDir("job-shard");
  const nlohmann::json fp = {{"model", "abc"}, {"configs", {"k=q4_0,v=q4_0"}}};
  std::vector<nlohmann::json> lines;
  auto run = JobRun::Open(kTestJob, OptionsFor(dir, {1, 2}), fp, {5, 1, 3}, &lines);
  ASSERT_TRUE(run.ok()) << run.error().message;
  // The journal names the shard: a rerun as shard 0 of the same run is refused.
  const std::string journal_text = Slurp(dir / "progress.jsonl");
  const nlohmann::json header = nlohmann::json::parse(journal_text.substr(0, journal_text.find('\n')));
  EXPECT_EQ(header["fingerprint"], ShardFingerprint(fp, {1, 2}));
  ASSERT_TRUE(run->WriteShard({{"s", 1}}, ShardRunJson({}, 0, 2), false).ok());
  ASSERT_TRUE(run->Record({{"window", 1}}).ok());
  ASSERT_TRUE(run->WriteShard({{"s", 1}}, ShardRunJson({1.5, 80}, 3, 2), true).ok());
  // Byte for byte what shard.json has always held (run/shard_manifest.h).
  const std::string version = ProvenanceJson()["kvaudit_version"].get<std::string>();
  EXPECT_EQ(Slurp(dir / "shard.json"),
            "{\"fingerprint\":{\"configs\":[\"k=q4_0,v=q4_0\"],\"model\":\"abc\"},\"finished\":true,"
            "\"journal_kind\":\"kvaudit_eval_progress\",\"kind\":\"eval\",\"kvaudit_shard\":1,\"kvaudit_version\":\"" +
                version +
                "\",\"run\":{\"peak_rss_mb\":80.0,\"resumed\":3,\"threads\":2,\"wall_s\":1.5},"
                "\"shard\":{\"count\":2,\"index\":1},\"summary\":{\"s\":1},\"units\":[1,2]}\n");
  auto read = ReadShardManifest(dir.string());
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->fingerprint, fp);
  auto finished = run->Finish(nullptr);
  ASSERT_TRUE(finished.ok());
  EXPECT_EQ(*finished, (dir / "shard.json").string());
  EXPECT_FALSE(fs::exists(dir / "results.json")) << "a shard has no statistics of its own";

  const std::string journal = Slurp(dir / "progress.jsonl"), manifest = Slurp(dir / "shard.json");
  auto other_shard = JobRun::Open(kTestJob, OptionsFor(dir, {0, 2}), fp, {5, 1, 3}, &lines);
  ASSERT_FALSE(other_shard.ok());
  EXPECT_EQ(other_shard.error().exit_code(), 2);
  EXPECT_NE(other_shard.error().message.find("shard"), std::string::npos) << other_shard.error().message;
  EXPECT_EQ(Slurp(dir / "progress.jsonl"), journal) << "refused: nothing in DIR changes";
  EXPECT_EQ(Slurp(dir / "shard.json"), manifest);
  fs::remove_all(dir);
}

TEST(JobRun, ResumesItsRecordsAndRestartsOnRequest) {
  const fs::path dir = testing::MakeTempDir("job-resume");
  const nlohmann::json fp = {{"model", "abc"}};
  std::vector<nlohmann::json> lines;
  {
    auto run = JobRun::Open(kTestJob, OptionsFor(dir), fp, {1, 1}, &lines);
    ASSERT_TRUE(run.ok());
    EXPECT_TRUE(lines.empty());
    ASSERT_TRUE(run->Record({{"window", 0}}).ok());
  }
  auto again = JobRun::Open(kTestJob, OptionsFor(dir), fp, {1, 1}, &lines);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["window"], 0);
  auto changed = JobRun::Open(kTestJob, OptionsFor(dir), {{"model", "xyz"}}, {1, 1}, &lines);
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.error().message.find("model"), std::string::npos) << changed.error().message;
  JobOptions restart = OptionsFor(dir);
  restart.restart = true;
  auto fresh = JobRun::Open(kTestJob, restart, {{"model", "xyz"}}, {1, 1}, &lines);
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  EXPECT_TRUE(lines.empty());
  auto done = fresh->Finish({{"answer", 42}});
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(*done, (dir / "results.json").string());
  EXPECT_EQ(Slurp(dir / "results.json"), "{\n  \"answer\": 42\n}\n");
  fs::remove_all(dir);
}

TEST(StagedJobRun, ARoundIsWrittenUnfinishedThenWithItsTotals) {
  const fs::path dir = testing::MakeTempDir("job-staged");
  auto job = StagedJobRun::Prepare("audit", OptionsFor(dir, {0, 3}), RunClock(), 2);
  ASSERT_TRUE(job.ok());
  const ShardRound round{{"eval", "probe"}, true};
  auto started = job->WriteRound(round, false);
  ASSERT_TRUE(started.ok());
  EXPECT_EQ(started->wall_s, 0);
  auto m = ReadShardManifest(dir.string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_FALSE(m->finished);
  EXPECT_EQ(m->kind, "audit");
  EXPECT_EQ(m->summary["stages"], nlohmann::json({"eval", "probe"}));
  EXPECT_EQ(m->run["wall_s"], 0);
  auto ended = job->WriteRound(round, true);
  ASSERT_TRUE(ended.ok());
  m = ReadShardManifest(dir.string());
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->finished);
  EXPECT_EQ(m->run["wall_s"].get<double>(), ended->wall_s);
  EXPECT_GT(m->run["peak_rss_mb"].get<double>(), 0);
  EXPECT_EQ(m->run["threads"], 2);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvaudit

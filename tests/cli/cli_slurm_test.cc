// examples/slurm on a real single-node Slurm cluster (docs/scale-out.md "Slurm"): an audit's
// array of shards and its afterok merge job give the unsharded audit (every results.json but the
// run blocks, the journals, the gate's files); with --budget the merge jobs chain the rounds; a
// task whose kvaudit is SIGKILLed mid-run fails, is requeued and resumes from its journal; a task
// requeued while running (preemption) resumes too.
// The cluster (support/slurm_cluster.h) is stopped after each test, every job cancelled first.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/fixtures.h"
#include "support/results_tree.h"
#include "support/run_cli.h"
#include "support/slurm_cluster.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using testing::ReadFile;
using testing::RunCli;
using testing::SlurmCluster;

// A small audit of the bundled model, and one with a recommendation (--budget: the shards run
// several rounds, each merge job submitting the next). The verdicts do not matter here (exit 1
// is not a job failure); that the gate ran does, so the policy fails q4_0 for certain.
const std::string kAuditFlags =
    "--kv k=q4_0,v=q4_0 --kv k=q8_0,v=q8_0 --ctx 256 --windows 4 --lengths 256 --attn-samples 4";
const std::string kBudgetFlags = "--ctx 256 --windows 2 --calib-windows 2 --lengths 256 --attn-samples 4 --budget 1800";
constexpr const char* kPolicy =
    "[fidelity]\nkld_mean_max = 0.005\n[probes.needle]\nrequired = true\ncache_induced_rate_max = 0.1\n";

struct Audit {
  std::string flags;
  fs::path dir;
  // The environment examples/slurm's scripts read (sbatch --export=ALL passes it to the jobs).
  std::string Env() const {
    return "KVAUDIT=" + testing::KvauditBinary().string() + " MODEL=" + testing::BundledModelDir().string() +
           " DATA=" + (testing::RepoDir() / "data" / "eval-docs.jsonl").string() + " AUDIT_DIR=" + dir.string() +
           " AUDIT_FLAGS='" + flags + "' ";
  }
  std::string Script(const std::string& name) const {
    return (testing::RepoDir() / "examples" / "slurm" / name).string();
  }
};

Audit NewAudit(const std::string& tag, const std::string& flags) {
  Audit a;
  a.dir = testing::MakeTempDir(tag);
  std::ofstream(a.dir / "policy.toml") << kPolicy;
  a.flags = flags + " --policy " + (a.dir / "policy.toml").string();
  return a;
}

nlohmann::json ReadJson(const fs::path& file) {
  nlohmann::json j = nlohmann::json::parse(ReadFile(file.string()), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << file << " is not JSON";
  return j;
}

// The same audit unsharded, as one machine runs it (exit 1: a verdict).
fs::path Unsharded(const Audit& audit, const std::string& tag) {
  const fs::path out = testing::MakeTempDir(tag);
  const auto r = RunCli("audit " + testing::BundledJobFlags() + audit.flags + " --out " + out.string(), 300);
  EXPECT_LE(r.exit_code, 1) << r.err;
  return out;
}

// Every results.json of the unsharded audit equals the one the Slurm jobs left at the same place
// (but the run blocks and directory names), eval's and probe's journals byte for byte, and the
// gate's JUnit file.
void ExpectSameAsUnsharded(const fs::path& merged, const fs::path& whole) {
  testing::ExpectSameResultsTree(merged, whole, 3);
  for (const char* stage : {"eval", "probe"}) {
    EXPECT_EQ(ReadFile((merged / stage / "progress.jsonl").string()),
              ReadFile((whole / stage / "progress.jsonl").string()));
  }
  EXPECT_EQ(testing::ReplaceAll(ReadFile((merged / "gate.xml").string()), merged.string(), "DIR"),
            testing::ReplaceAll(ReadFile((whole / "gate.xml").string()), whole.string(), "DIR"));
  EXPECT_TRUE(fs::exists(merged / "report.html"));
}

size_t JournalLines(const fs::path& dir) {
  if (!fs::exists(dir / "progress.jsonl")) return 0;
  const std::string text = ReadFile((dir / "progress.jsonl").string());
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::pair<std::string, std::string> SubmitAudit(const SlurmCluster& cluster, const Audit& audit, int n) {
  const auto r = cluster.Run(audit.Env() + "bash " + audit.Script("submit.sh") + " " + std::to_string(n) +
                             " --cpus-per-task=1");  // two tasks at once on two cores; threads 1
  std::istringstream ids(r.out);
  std::string array, merge;
  ids >> array >> merge;
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(merge.empty()) << "submit.sh printed no two job ids: " << r.out;
  return {array, merge};
}

void ExpectAllCompleted(const SlurmCluster& cluster, const std::string& job, size_t count) {
  const auto states = cluster.States(job);
  EXPECT_EQ(states.size(), count) << job;
  for (const std::string& s : states) EXPECT_EQ(s, "COMPLETED") << job << "\n" << cluster.LogTail();
}

bool Finished(const fs::path& dir) {
  return fs::exists(dir / "shard.json") && ReadJson(dir / "shard.json").value("finished", false);
}

TEST(SlurmCliTest, AnArrayOfShardsAndItsMergeJobGiveTheUnshardedAudit) {
  const auto start = std::chrono::steady_clock::now();
  auto cluster = SlurmCluster::Start(testing::MakeTempDir("slurm-array") / "cluster");
  ASSERT_TRUE(cluster);
  const Audit audit = NewAudit("slurm-array-audit", kAuditFlags);
  constexpr int kShards = 4;
  const auto [array, merge] = SubmitAudit(*cluster, audit, kShards);
  ASSERT_FALSE(merge.empty());
  const fs::path whole = Unsharded(audit, "slurm-array-whole");  // while the cluster works
  ASSERT_TRUE(cluster->WaitUntilDone(array, seconds(300))) << cluster->LogTail();
  ASSERT_TRUE(cluster->WaitUntilDone(merge, seconds(120))) << cluster->LogTail();
  ExpectAllCompleted(*cluster, array, kShards);
  // q4_0 fails kPolicy: the audit's exit 1 is a verdict, and the merge job still completes.
  const std::string merge_log = ReadFile((audit.dir / "logs" / "merge-1.log").string());
  EXPECT_EQ(cluster->State(merge), "COMPLETED") << merge_log;
  EXPECT_NE(merge_log.find("kvaudit audit finished after round 1"), std::string::npos) << merge_log;
  EXPECT_FALSE(ReadJson(audit.dir / "logs" / "merge-1.json")["more_rounds"].get<bool>());
  for (int i = 0; i < kShards; ++i) {
    SCOPED_TRACE("shard " + std::to_string(i));
    // Run by Slurm: the task's log holds the script's line and kvaudit's, and the threads are the
    // task's CPUs (SLURM_CPUS_PER_TASK).
    const std::string shard = std::to_string(i) + "/" + std::to_string(kShards);
    const std::string log = ReadFile((audit.dir / "logs" / ("shard-" + std::to_string(i) + ".log")).string());
    EXPECT_NE(log.find("kvaudit shard " + shard + " round 1 on "), std::string::npos) << log;
    EXPECT_NE(log.find("shard " + shard + ": stages eval, probe"), std::string::npos) << log;
    for (const char* kind : {"eval", "probe"}) {
      const nlohmann::json m = ReadJson(audit.dir / ("shard-" + std::to_string(i)) / kind / "shard.json");
      EXPECT_EQ(m["run"]["threads"], 1) << kind;
      EXPECT_EQ(m["shard"]["index"], i) << kind;
      EXPECT_EQ(m["shard"]["count"], kShards) << kind;
    }
  }
  ExpectSameAsUnsharded(audit.dir / "audit", whole);
  cluster->Stop();
  std::cout << "[ timing ] array of " << kShards << " + merge on Slurm, with the unsharded audit: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
}

// An audit with a recommendation, whose merge jobs chain the rounds. In round 1, task 0's kvaudit
// is SIGKILLed in its probes (a crash: the task fails) and requeued by hand; task 1 is requeued
// while running (what preemption does to a --requeue job). Both rerun the same command and resume
// their journals. Slurm 22.05 cancels the afterok merge once a task has failed, requeued or not
// (examples/slurm/submit.sh says so), so round 1's merge is submitted again, and the chain goes on.
TEST(SlurmCliTest, AKilledTaskAndAPreemptedOneResumeAndTheRoundsChainToTheUnshardedAudit) {
  const auto start = std::chrono::steady_clock::now();
  auto cluster = SlurmCluster::Start(testing::MakeTempDir("slurm-requeue") / "cluster");
  ASSERT_TRUE(cluster);
  const Audit audit = NewAudit("slurm-requeue-audit", kBudgetFlags);
  const auto [array, merge] = SubmitAudit(*cluster, audit, 2);
  ASSERT_FALSE(merge.empty());
  const fs::path p0 = audit.dir / "shard-0" / "probe", p1 = audit.dir / "shard-1" / "probe";
  // Each task is interrupted as soon as its probe journal holds the header and a probe (bounded
  // wait: 120 s): task 0's kvaudit is killed, task 1 requeued.
  const std::string task0 = array + "_0", task1 = array + "_1";
  bool killed = false, requeued = false;
  const auto deadline = std::chrono::steady_clock::now() + seconds(120);
  while (std::chrono::steady_clock::now() < deadline && !(killed && requeued)) {
    if (!killed && JournalLines(p0) >= 2) {
      const auto victims = cluster->JobProcesses({"audit", "--out", (audit.dir / "shard-0").string()});
      ASSERT_EQ(victims.size(), 1u) << "task 0's kvaudit audit, found by its --out among the job processes";
      ASSERT_EQ(kill(victims[0], SIGKILL), 0);
      killed = true;
    }
    if (!requeued && JournalLines(p1) >= 2) {
      ASSERT_FALSE(Finished(p1)) << "task 1's probes finished before it was requeued";
      ASSERT_TRUE(cluster->Requeue(task1));
      requeued = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(killed && requeued) << "no probe recorded in 120 s\n" << cluster->LogTail();
  ASSERT_TRUE(cluster->WaitForState(task0, "FAILED", seconds(60))) << cluster->LogTail();
  ASSERT_FALSE(Finished(p0)) << "task 0's probes finished before it was killed";
  const size_t recorded = JournalLines(p0) - 1;
  EXPECT_GE(recorded, 1u);
  ASSERT_TRUE(cluster->Requeue(task0));
  const fs::path whole = Unsharded(audit, "slurm-requeue-whole");
  ASSERT_TRUE(cluster->WaitUntilDone(array, seconds(300))) << cluster->LogTail();
  ExpectAllCompleted(*cluster, array, 2);
  EXPECT_EQ(ReadJson(p0 / "shard.json")["run"]["resumed"], recorded);
  EXPECT_GE(ReadJson(p1 / "shard.json")["run"]["resumed"].get<int>(), 1);
  const std::string log1 = ReadFile((audit.dir / "logs" / "shard-1.log").string());
  EXPECT_NE(log1.find("DUE TO JOB REQUEUE"), std::string::npos) << log1;
  EXPECT_NE(log1.find("restart 1"), std::string::npos) << log1;  // the log appended, not replaced
  ASSERT_TRUE(cluster->WaitUntilDone(merge, seconds(60)));
  EXPECT_EQ(cluster->State(merge), "CANCELLED");
  // Round 1's merge again, alone, with what submit.sh gives it; it submits rounds 2, 3, ... itself.
  const std::string env =
      audit.Env() + "ROUND=1 SHARDS=2 KVAUDIT_SLURM_EXAMPLES=" + (testing::RepoDir() / "examples" / "slurm").string() +
      " KVAUDIT_SBATCH_FLAGS=--cpus-per-task=1 ";
  const std::string again =
      cluster->Submit("--cpus-per-task=1 --output=" + (audit.dir / "logs" / "merge-1.log").string() + " " +
                          audit.Script("merge.sbatch"),
                      env);
  ASSERT_FALSE(again.empty());
  ASSERT_TRUE(cluster->WaitUntilIdle(seconds(600))) << cluster->LogTail();
  // The rounds: eval + probe + proxy, the parts stage, then a round per verification round the
  // policy's verdicts call for, then one with nothing left; the last merge job finishes the audit.
  int rounds = 0;
  while (fs::exists(audit.dir / "logs" / ("merge-" + std::to_string(rounds + 1) + ".json"))) ++rounds;
  ASSERT_GE(rounds, 4) << "at least one verification round";
  for (int round = 1; round < rounds; ++round) {
    EXPECT_TRUE(ReadJson(audit.dir / "logs" / ("merge-" + std::to_string(round) + ".json"))["more_rounds"].get<bool>());
  }
  const std::string last = ReadFile((audit.dir / "logs" / ("merge-" + std::to_string(rounds) + ".log")).string());
  EXPECT_NE(last.find("kvaudit audit finished after round " + std::to_string(rounds)), std::string::npos) << last;
  ExpectSameAsUnsharded(audit.dir / "audit", whole);
  cluster->Stop();
  std::cout << "[ timing ] kill + requeue + preemption + " << rounds
            << " chained rounds on Slurm, with the unsharded audit: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
}

}  // namespace
}  // namespace kvaudit

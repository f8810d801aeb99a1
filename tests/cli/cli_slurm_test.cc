// examples/slurm on a real single-node Slurm cluster (issue 14; docs/scale-out.md): an array of
// shards and its afterok merge job give the unsharded results.json but the run block, for eval
// and for probe, with the gate's files; a task whose kvaudit is SIGKILLed mid-run fails, is
// requeued and resumes from its journal; a task requeued while running (preemption) resumes too.
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
#include "support/run_cli.h"
#include "support/slurm_cluster.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;
using testing::ReadFile;
using testing::RunCli;
using testing::SlurmCluster;

const std::string kKv = "--kv k=q4_0,v=q4_0 --kv k=q8_0,v=q8_0";
const std::string kEvalFlags = "--bootstrap 200 --ctx 256 --windows 6 --attn-samples 8";
const std::string kProbeFlags =
    "--family needle,variance --variant code --lengths 256 --depths 0,50,100 --samples 2 --variance-tokens 8";
// The gate's verdict does not matter here (exit 1 is not a job failure); that it ran does.
constexpr const char* kPolicy =
    "[fidelity]\nkld_mean_max = 0.005\n[probes.needle]\nrequired = true\ncache_induced_rate_max = 0.1\n";

struct Audit {
  std::string eval_flags = kEvalFlags, probe_flags = kProbeFlags;
  fs::path dir;
  // The environment examples/slurm's scripts read (sbatch --export=ALL passes it to the jobs).
  std::string Env() const {
    return "KVAUDIT=" + testing::KvauditBinary().string() + " MODEL=" + testing::BundledModelDir().string() +
           " DATA=" + (testing::RepoDir() / "data" / "eval-docs.jsonl").string() + " AUDIT_DIR=" + dir.string() +
           " POLICY=" + (dir / "policy.toml").string() + " KV='" + kKv + "' EVAL_FLAGS='" + eval_flags +
           "' PROBE_FLAGS='" + probe_flags + "' ";
  }
  std::string Script(const std::string& name) const {
    return (testing::RepoDir() / "examples" / "slurm" / name).string();
  }
};

Audit NewAudit(const std::string& tag) {
  Audit a;
  a.dir = testing::MakeTempDir(tag);
  std::ofstream(a.dir / "policy.toml") << kPolicy;
  return a;
}

nlohmann::json ReadJson(const fs::path& file) {
  nlohmann::json j = nlohmann::json::parse(ReadFile(file.string()), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << file << " is not JSON";
  return j;
}

// results.json without the run block (timings, resumed counts, command line: docs/scale-out.md).
std::string WithoutRun(const fs::path& dir) {
  nlohmann::json j = ReadJson(dir / "results.json");
  EXPECT_TRUE(j.contains("run")) << dir;
  j.erase("run");
  return j.dump(2);
}

// The same job unsharded, as one machine runs it.
fs::path Unsharded(const std::string& kind, const std::string& flags, const std::string& tag) {
  const fs::path out = testing::MakeTempDir(tag);
  const auto r = RunCli(kind + " " + testing::BundledJobFlags() + kKv + " " + flags + " --out " + out.string(), 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out;
}

// The merged directory against the unsharded one: results.json but the run block, and the journal
// byte for byte (the unsharded header, every record in unit order).
void ExpectSameAsUnsharded(const fs::path& merged, const fs::path& whole) {
  EXPECT_EQ(WithoutRun(merged), WithoutRun(whole)) << merged;
  EXPECT_EQ(ReadFile((merged / "progress.jsonl").string()), ReadFile((whole / "progress.jsonl").string())) << merged;
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

TEST(SlurmCliTest, AnArrayOfShardsAndItsMergeJobGiveTheUnshardedResults) {
  const auto start = std::chrono::steady_clock::now();
  auto cluster = SlurmCluster::Start(testing::MakeTempDir("slurm-array") / "cluster");
  ASSERT_TRUE(cluster);
  const Audit audit = NewAudit("slurm-array-audit");
  constexpr int kShards = 4;
  const auto [array, merge] = SubmitAudit(*cluster, audit, kShards);
  ASSERT_FALSE(merge.empty());
  // While the cluster works: the unsharded runs to compare with.
  const fs::path eval = Unsharded("eval", kEvalFlags, "slurm-array-eval");
  const fs::path probe = Unsharded("probe", kProbeFlags, "slurm-array-probe");
  ASSERT_TRUE(cluster->WaitUntilDone(array, seconds(300))) << cluster->LogTail();
  ASSERT_TRUE(cluster->WaitUntilDone(merge, seconds(120))) << cluster->LogTail();
  ExpectAllCompleted(*cluster, array, kShards);
  // q4_0 fails kPolicy: the gate's exit 1 is a verdict, and the merge job still completes.
  const std::string merge_log = ReadFile((audit.dir / "logs" / "merge.log").string());
  EXPECT_EQ(cluster->State(merge), "COMPLETED") << merge_log;
  EXPECT_NE(merge_log.find("gate: FAIL: 1 of 2 configurations fail"), std::string::npos) << merge_log;
  for (int i = 0; i < kShards; ++i) {
    SCOPED_TRACE("shard " + std::to_string(i));
    // Run by Slurm: the task's log holds the script's line and kvaudit's, and the threads are the
    // task's CPUs (SLURM_CPUS_PER_TASK).
    const std::string shard = std::to_string(i) + "/" + std::to_string(kShards);
    const std::string log = ReadFile((audit.dir / "logs" / ("shard-" + std::to_string(i) + ".log")).string());
    EXPECT_NE(log.find("kvaudit shard " + shard + " on "), std::string::npos) << log;
    EXPECT_NE(log.find("shard " + shard + ":"), std::string::npos) << log;
    for (const char* kind : {"eval", "probe"}) {
      const fs::path dir = audit.dir / (std::string(kind) + "-shard-" + std::to_string(i));
      const nlohmann::json m = ReadJson(dir / "shard.json");
      EXPECT_EQ(m["run"]["threads"], 1) << kind;
      EXPECT_EQ(m["shard"]["index"], i) << kind;
      EXPECT_EQ(m["shard"]["count"], kShards) << kind;
    }
  }
  ExpectSameAsUnsharded(audit.dir / "eval", eval);
  ExpectSameAsUnsharded(audit.dir / "probe", probe);
  EXPECT_TRUE(fs::exists(audit.dir / "gate.xml"));
  EXPECT_TRUE(fs::exists(audit.dir / "gate.md"));
  cluster->Stop();
  std::cout << "[ timing ] array of " << kShards << " + merge on Slurm, with the unsharded runs: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
}

// Task 0's kvaudit is SIGKILLed after its first window (a crash: the task fails) and requeued by
// hand; task 1 is requeued while running (what preemption does to a --requeue job). Both rerun
// the same commands and resume their journals. Slurm 22.05 cancels the afterok merge once a task
// has failed, requeued or not (examples/slurm/submit.sh says so), so the merge is submitted again.
TEST(SlurmCliTest, AKilledTaskAndAPreemptedOneResumeFromTheirJournals) {
  const auto start = std::chrono::steady_clock::now();
  auto cluster = SlurmCluster::Start(testing::MakeTempDir("slurm-requeue") / "cluster");
  ASSERT_TRUE(cluster);
  Audit audit = NewAudit("slurm-requeue-audit");
  // Longer windows, 4 per shard, so each task is surely mid-run when its journal first grows.
  audit.eval_flags = "--bootstrap 200 --ctx 512 --windows 8 --attn-samples 8";
  audit.probe_flags = "--family needle --variant code --lengths 256 --depths 0,100";
  const auto [array, merge] = SubmitAudit(*cluster, audit, 2);
  ASSERT_FALSE(merge.empty());
  const fs::path s0 = audit.dir / "eval-shard-0", s1 = audit.dir / "eval-shard-1";
  // Each task's eval is interrupted as soon as its journal holds the header and a window (bounded
  // wait: 120 s): task 0's kvaudit is killed, task 1 requeued.
  const std::string task0 = array + "_0", task1 = array + "_1";
  bool killed = false, requeued = false;
  const auto deadline = std::chrono::steady_clock::now() + seconds(120);
  while (std::chrono::steady_clock::now() < deadline && !(killed && requeued)) {
    if (!killed && JournalLines(s0) >= 2) {
      const auto victims = cluster->JobProcesses({"eval", "--out", s0.string()});
      ASSERT_EQ(victims.size(), 1u) << "task 0's kvaudit eval, found by its --out among the job processes";
      ASSERT_EQ(kill(victims[0], SIGKILL), 0);
      killed = true;
    }
    if (!requeued && JournalLines(s1) >= 2) {
      ASSERT_FALSE(fs::exists(s1 / "shard.json")) << "task 1's eval finished before it was requeued";
      ASSERT_TRUE(cluster->Requeue(task1));
      requeued = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(killed && requeued) << "no window recorded in 120 s\n" << cluster->LogTail();
  ASSERT_TRUE(cluster->WaitForState(task0, "FAILED", seconds(60))) << cluster->LogTail();
  ASSERT_FALSE(fs::exists(s0 / "shard.json")) << "task 0's eval finished before it was killed";
  const size_t recorded = JournalLines(s0) - 1;
  EXPECT_GE(recorded, 1u);
  EXPECT_LT(recorded, 4u);  // of its 4 windows
  ASSERT_TRUE(cluster->Requeue(task0));
  const fs::path eval = Unsharded("eval", audit.eval_flags, "slurm-requeue-eval");
  const fs::path probe = Unsharded("probe", audit.probe_flags, "slurm-requeue-probe");
  ASSERT_TRUE(cluster->WaitUntilDone(array, seconds(300))) << cluster->LogTail();
  ExpectAllCompleted(*cluster, array, 2);
  EXPECT_EQ(ReadJson(s0 / "shard.json")["run"]["resumed"], recorded);
  EXPECT_GE(ReadJson(s1 / "shard.json")["run"]["resumed"].get<int>(), 1);
  const std::string log1 = ReadFile((audit.dir / "logs" / "shard-1.log").string());
  EXPECT_NE(log1.find("DUE TO JOB REQUEUE"), std::string::npos) << log1;
  EXPECT_NE(log1.find("restart 1"), std::string::npos) << log1;  // the log appended, not replaced
  ASSERT_TRUE(cluster->WaitUntilDone(merge, seconds(60)));
  EXPECT_EQ(cluster->State(merge), "CANCELLED");
  const fs::path merge_log = audit.dir / "logs" / "merge.log";
  const std::string resubmit = "sbatch --wait --output=" + merge_log.string() + " " + audit.Script("merge.sbatch");
  const auto again = cluster->Run(audit.Env() + resubmit, 180);
  ASSERT_EQ(again.exit_code, 0) << again.out << ReadFile(merge_log.string());
  ExpectSameAsUnsharded(audit.dir / "eval", eval);
  ExpectSameAsUnsharded(audit.dir / "probe", probe);
  EXPECT_TRUE(fs::exists(audit.dir / "gate.md"));
  cluster->Stop();
  std::cout << "[ timing ] kill + requeue + preemption on Slurm, with the unsharded runs: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
}

}  // namespace
}  // namespace kvaudit

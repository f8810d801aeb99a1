// `--shard I/N` and `kvaudit merge` end to end on the bundled model (docs/scale-out.md):
// N = 1, 2, 3 shards merged give the unsharded results.json except its run block, and the
// unsharded journal byte for byte, for eval and for probe; a shard run twice resumes; merge
// refuses mixed inputs, a duplicated shard and a missing one with one line and exit 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/budget_audit.h"
#include "support/child_process.h"
#include "support/fixtures.h"
#include "support/results_tree.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunCli;

const std::string kModel = testing::BundledJobFlags();
const std::string kEvalBase = "eval " + kModel + "--bootstrap 200 ";
const std::string kEval = kEvalBase + "--ctx 256 --windows 6 --attn-samples 8 ";
const std::string kProbe = "probe " + kModel +
                           "--family needle,variance --variant code --lengths 256 --depths 0,50,100 --samples 2 "
                           "--variance-tokens 8 ";

// results.json without the run block (timings, resumed counts, command line: docs/scale-out.md).
std::string WithoutRun(const fs::path& dir) {
  nlohmann::json j = nlohmann::json::parse(ReadFile((dir / "results.json").string()), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << dir;
  EXPECT_TRUE(j.contains("run"));
  j.erase("run");
  return j.dump(2);
}

// Runs shards 0..n-1 of `job` into tag-i directories and returns them.
std::vector<fs::path> RunShards(const std::string& job, const std::string& tag, int n) {
  std::vector<fs::path> dirs;
  for (int i = 0; i < n; ++i) {
    dirs.push_back(testing::MakeTempDir(tag + "-" + std::to_string(i)));
    const std::string shard = std::to_string(i) + "/" + std::to_string(n);
    const auto r = RunCli(job + "--shard " + shard + " --out " + dirs.back().string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("shard " + shard + ":"), std::string::npos) << r.out;
    EXPECT_TRUE(fs::exists(dirs.back() / "shard.json"));
    EXPECT_FALSE(fs::exists(dirs.back() / "results.json"));  // a part has no statistics of its own
  }
  return dirs;
}

testing::CliResult Merge(const std::vector<fs::path>& dirs, const fs::path& out) {
  std::string args = "merge";
  for (const fs::path& d : dirs) args += " " + d.string();
  return RunCli(args + " --out " + out.string());
}

// One line on stderr containing every `needle`, exit 2.
void ExpectRefused(const testing::CliResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  for (const std::string& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << n << " not in " << r.err;
  EXPECT_NE(r.err.find("hint:"), std::string::npos) << r.err;
}

void ExpectMergesToUnsharded(const std::string& job, const std::string& tag) {
  const fs::path whole = testing::MakeTempDir(tag + "-whole");
  const auto r = RunCli(job + "--out " + whole.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int n = 1; n <= 3; ++n) {
    const auto dirs = RunShards(job, tag + std::to_string(n), n);
    const fs::path merged = testing::MakeTempDir(tag + std::to_string(n) + "-merged");
    const auto m = Merge(dirs, merged);
    ASSERT_EQ(m.exit_code, 0) << m.err;
    EXPECT_NE(m.out.find("merged " + std::to_string(n) + " "), std::string::npos) << m.out;
    EXPECT_EQ(WithoutRun(merged), WithoutRun(whole)) << n << " shards";
    EXPECT_EQ(ReadFile((merged / "progress.jsonl").string()), ReadFile((whole / "progress.jsonl").string()))
        << n << " shards";
  }
}

TEST(MergeCliTest, EvalShardsMergeToTheUnshardedResults) {
  ExpectMergesToUnsharded(kEval + "--kv k=q4_0,v=q4_0 --kv k=q8_0,v=q8_0 ", "merge-eval");
}

TEST(MergeCliTest, ProbeShardsMergeToTheUnshardedResults) {
  ExpectMergesToUnsharded(kProbe + "--kv k=q4_0,v=q4_0 ", "merge-probe");
}

TEST(MergeCliTest, AMergedEvalResumesAsAnUnshardedRun) {
  const std::string job = kEval + "--kv k=q4_0,v=q4_0 ";
  const auto dirs = RunShards(job, "merge-resume", 2);
  // A shard run again resumes every window it owns and leaves the same manifest units.
  const auto again = RunCli(job + "--shard 1/2 --out " + dirs[1].string());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const fs::path merged = testing::MakeTempDir("merge-resume-merged");
  ASSERT_EQ(Merge(dirs, merged).exit_code, 0);
  const std::string before = WithoutRun(merged);
  // The merged journal carries the unsharded fingerprint: an unsharded run into it computes nothing.
  const auto r = RunCli(job + "--json --out " + merged.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["run"]["windows_resumed"], 6);
  EXPECT_EQ(WithoutRun(merged), before);
}

bool ManifestFinished(const fs::path& dir) {
  const nlohmann::json m = nlohmann::json::parse(ReadFile((dir / "shard.json").string()), nullptr, false);
  EXPECT_TRUE(m.is_object() && m.contains("finished")) << dir;
  return m.value("finished", true);
}

size_t JournalLines(const fs::path& dir) {
  if (!fs::exists(dir / "progress.jsonl")) return 0;
  const std::string text = ReadFile((dir / "progress.jsonl").string());
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

// Runs `kvaudit args` and SIGKILLs it once dir's journal has `lines` lines (bounded wait: 120 s);
// false (a test failure) when it finished before the kill.
bool KilledAfter(const std::string& args, const fs::path& dir, size_t lines) {
  std::vector<std::string> argv = {testing::KvauditBinary().string()};
  std::istringstream words(args);
  for (std::string w; words >> w;) argv.push_back(w);
  auto child = testing::ChildProcess::Start(argv);
  if (!child) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && JournalLines(dir) < lines) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  child->Signal(SIGKILL);
  const bool killed = child->WaitExit(30000) == std::optional<int>(-1);
  EXPECT_TRUE(killed) << "the shard finished before it was killed";
  return killed;
}

// A shard rerun with other flags is refused before it writes anything: its shard.json still
// describes the finished shard (a rerun must not turn a finished shard into an unfinished one of
// another run, which `merge` would then refuse or skip).
TEST(MergeCliTest, ARefusedShardLeavesItsManifestAsItWas) {
  const std::string eval = kEvalBase + "--ctx 128 --windows 2 --kv k=q4_0,v=q4_0 ";
  const std::string probe = "probe " + kModel + "--family needle --lengths 256 --depths 50 ";
  for (const auto& [job, other] :
       {std::pair{eval, "--kv k=q8_0,v=q8_0 "}, {probe + "--kv k=q4_0,v=q4_0 ", "--kv k=q8_0,v=q8_0 "}}) {
    const fs::path dir = testing::MakeTempDir("merge-refused");
    const std::string out = " --shard 0/2 --out " + dir.string();
    ASSERT_EQ(RunCli(job + out).exit_code, 0) << job;
    const std::string before = ReadFile((dir / "shard.json").string());
    ASSERT_NE(before.find("\"finished\":true"), std::string::npos) << before;
    const auto r = RunCli(job + other + out);
    ExpectRefused(r, {"progress.jsonl"});
    EXPECT_TRUE(ReadFile((dir / "shard.json").string()) == before) << job << " rewrote its shard.json";
  }
}

TEST(MergeCliTest, AShardKilledMidRunResumesAndMergesToTheSameResults) {
  // Longer windows than elsewhere so the shard is surely mid-run when the journal first grows.
  const std::string job = kEvalBase + "--windows 8 --attn-samples 8 --ctx 512 --kv k=q4_0,v=q4_0 ";
  const fs::path whole = testing::MakeTempDir("merge-kill-whole");
  ASSERT_EQ(RunCli(job + "--out " + whole.string()).exit_code, 0);
  const fs::path s0 = testing::MakeTempDir("merge-kill-0"), s1 = testing::MakeTempDir("merge-kill-1");
  ASSERT_TRUE(KilledAfter(job + "--shard 0/2 --out " + s0.string(), s0, 2));
  EXPECT_FALSE(ManifestFinished(s0));  // written at its start, not rewritten at an end it never reached
  const size_t recorded = JournalLines(s0) - 1;
  EXPECT_GE(recorded, 1u);
  EXPECT_LT(recorded, 4u);  // of its 4 windows
  const fs::path merged = testing::MakeTempDir("merge-kill-merged");
  ASSERT_EQ(RunCli(job + "--shard 1/2 --out " + s1.string()).exit_code, 0);
  ExpectRefused(Merge({s0, s1}, merged), {"shard 0/2", s0.string(), "has not finished", "--partial"});
  // merge --partial reads the killed shard's journal without touching it, a torn last line included
  // (what a shard still running may show), and says what the results hold.
  {
    std::ofstream torn(s0 / "progress.jsonl", std::ios::app);
    torn << "{\"window\": 7, \"tok";
  }
  const std::string journal = ReadFile((s0 / "progress.jsonl").string());
  const fs::path partial = testing::MakeTempDir("merge-kill-partial");
  const auto p = RunCli("merge --partial " + s0.string() + " " + s1.string() + " --out " + partial.string());
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(ReadFile((s0 / "progress.jsonl").string()), journal);
  EXPECT_NE(p.out.find("partial: " + std::to_string(recorded + 4) + " of 8 windows (shards finished 1; unfinished 0)"),
            std::string::npos)
      << p.out;
  const nlohmann::json pj = nlohmann::json::parse(ReadFile((partial / "results.json").string()));
  EXPECT_EQ(pj["partial"]["recorded"], recorded + 4);
  EXPECT_EQ(pj["partial"]["total"], 8);
  EXPECT_EQ(pj["partial"]["shards"][0]["state"], "unfinished");
  EXPECT_EQ(pj["partial"]["shards"][0]["recorded"], recorded);
  EXPECT_EQ(pj["partial"]["shards"][1]["state"], "finished");
  EXPECT_EQ(pj["data"]["windows"], recorded + 4);
  // A partial result is no deployment decision: gate refuses it in one line.
  ExpectRefused(RunCli("gate --results " + partial.string() + " --policy balanced"), {"partial merge", "of 8 windows"});
  ASSERT_EQ(RunCli(job + "--shard 0/2 --out " + s0.string()).exit_code, 0);  // resubmitted: resumes
  const nlohmann::json manifest = nlohmann::json::parse(ReadFile((s0 / "shard.json").string()));
  EXPECT_EQ(manifest["run"]["resumed"], recorded);
  ASSERT_EQ(Merge({s0, s1}, merged).exit_code, 0);
  EXPECT_EQ(WithoutRun(merged), WithoutRun(whole));
  EXPECT_EQ(ReadFile((merged / "progress.jsonl").string()), ReadFile((whole / "progress.jsonl").string()));
}

TEST(MergeCliTest, RefusesMixedInputsDuplicatesAndGaps) {
  const std::string job = kEvalBase + "--ctx 256 --windows 3 --attn-samples 0 ";
  const auto q4 = RunShards(job + "--kv k=q4_0,v=q4_0 ", "merge-mix-q4", 2);
  const fs::path q8 = testing::MakeTempDir("merge-mix-q8");
  ASSERT_EQ(RunCli(job + "--kv k=q8_0,v=q8_0 --shard 1/2 --out " + q8.string()).exit_code, 0);
  const fs::path out = testing::MakeTempDir("merge-mix-out");
  ExpectRefused(Merge({q4[0], q8}, out), {"different runs", q4[0].string(), q8.string(), "configs"});
  ExpectRefused(Merge({q4[0], q4[0]}, out), {"shard 0/2 given twice"});
  ExpectRefused(Merge({q4[0], q4[1]}, q4[1]), {"is the shard directory"});
  ExpectRefused(Merge({q4[1]}, out), {"shard 0 of 2 missing", "--shard 0/2"});
  const fs::path three = testing::MakeTempDir("merge-mix-3");
  ASSERT_EQ(RunCli(job + "--kv k=q4_0,v=q4_0 --shard 2/3 --out " + three.string()).exit_code, 0);
  ExpectRefused(Merge({q4[0], q4[1], three}, out), {"shard count differs", "2/3"});
  ExpectRefused(Merge({out}, testing::MakeTempDir("merge-none")), {"shard.json", "no shard manifest"});
  ExpectRefused(RunCli("merge --partial " + out.string() + " --out " + testing::MakeTempDir("merge-none2").string()),
                {"no shard has started"});
  EXPECT_FALSE(fs::exists(out / "results.json"));
  ExpectRefused(RunCli(job + "--kv k=q4_0,v=q4_0 --shard 2/2 --out " + out.string()), {"--shard 2/2"});
  ExpectRefused(RunCli(kProbe + "--kv k=q4_0,v=q4_0 --shard x --out " + out.string()), {"--shard x"});
  // A resumed shard must be the same shard: another index into the same directory is refused.
  ExpectRefused(RunCli(job + "--kv k=q4_0,v=q4_0 --shard 1/2 --out " + q4[0].string()), {"shard", "changed"});
}

// A partial merge is what the unsharded run over the recorded windows alone computes: one shard
// of one killed after some windows equals `eval --windows K` for the K it recorded (their
// bootstrap, worst windows and buckets), but for the run and partial blocks.
TEST(MergeCliTest, APartialMergeEqualsTheRunOverTheRecordedWindows) {
  const std::string job = kEvalBase + "--attn-samples 8 --ctx 512 --kv k=q4_0,v=q4_0 ";
  const fs::path s0 = testing::MakeTempDir("merge-partial-0");
  ASSERT_TRUE(KilledAfter(job + "--windows 8 --shard 0/1 --out " + s0.string(), s0, 3));
  const size_t k = JournalLines(s0) - 1;
  ASSERT_GE(k, 2u);
  ASSERT_LT(k, 8u);
  const fs::path partial = testing::MakeTempDir("merge-partial-merged");
  const auto m = RunCli("merge --partial " + s0.string() + " --out " + partial.string());
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const fs::path whole = testing::MakeTempDir("merge-partial-whole");
  ASSERT_EQ(RunCli(job + "--windows " + std::to_string(k) + " --out " + whole.string()).exit_code, 0);
  nlohmann::json pj = nlohmann::json::parse(ReadFile((partial / "results.json").string()));
  ASSERT_TRUE(pj.contains("partial"));
  EXPECT_EQ(pj["partial"]["recorded"], k);
  pj.erase("partial"), pj.erase("run");
  EXPECT_EQ(pj.dump(2), WithoutRun(whole));
}

TEST(MergeCliTest, APartialProbeMergeHoldsTheFinishedShardsProbes) {
  const std::string job = kProbe + "--kv k=q4_0,v=q4_0 ";
  const auto dirs = RunShards(job, "merge-partial-probe", 2);
  const fs::path not_started = testing::MakeTempDir("merge-partial-probe-none");
  const fs::path out = testing::MakeTempDir("merge-partial-probe-out");
  const auto m = RunCli("merge --partial " + dirs[1].string() + " " + not_started.string() + " --out " + out.string());
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.out.find("(shards finished 1; missing 0; 1 directories not started)"), std::string::npos) << m.out;
  const nlohmann::json manifest = nlohmann::json::parse(ReadFile((dirs[1] / "shard.json").string()));
  const nlohmann::json pj = nlohmann::json::parse(ReadFile((out / "results.json").string()));
  EXPECT_EQ(pj["partial"]["unit"], "probe units");
  EXPECT_EQ(pj["partial"]["recorded"], manifest["units"].size());
  EXPECT_EQ(pj["partial"]["shards"][0]["state"], "missing");
  EXPECT_EQ(pj["partial"]["not_started"][0], not_started.string());
  // The report says what the page holds, in its missing-parts list.
  const fs::path page = out / "report.md";
  const auto r = RunCli("report " + out.string() + " --format md --out " + page.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string note = "partial merge: " + pj["partial"]["recorded"].dump() + " of " +
                           pj["partial"]["total"].dump() + " probe units of a 2-shard run; shards missing: 0.";
  EXPECT_NE(ReadFile(page.string()).find(note), std::string::npos) << ReadFile(page.string());
}

// Runs round `round` of shards 0..n-1 of `job` (--merged merged) into dirs, then merges them
// into merged; returns merge's output.
std::string RunRound(const std::string& job, const std::vector<fs::path>& dirs, const fs::path& merged) {
  const int n = static_cast<int>(dirs.size());
  for (int i = 0; i < n; ++i) {
    const std::string shard = std::to_string(i) + "/" + std::to_string(n);
    const auto r =
        RunCli(job + "--shard " + shard + " --merged " + merged.string() + " --out " + dirs[i].string(), 300);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("shard " + shard + ": "), std::string::npos) << r.out;
    EXPECT_TRUE(ManifestFinished(dirs[i]));
    EXPECT_FALSE(fs::exists(dirs[i] / "results.json") || fs::exists(dirs[i] / "report.html"));
  }
  const auto m = Merge(dirs, merged);
  EXPECT_EQ(m.exit_code, 0) << m.err;
  return m.out;
}

// Sensitivity in shards: round 1 the proxy windows, merge, round 2 (--merged) the parts stage's
// windows, merge; a third round has nothing left; the unsharded command into the merged directory
// resumes both stages and writes the unsharded results.
TEST(MergeCliTest, SensitivityInShardsRunsInTwoRoundsAndFinishesAsTheUnshardedRun) {
  const std::string job = "sensitivity " + kModel + "--ctx 256 --windows 3 --attn-samples 4 --formats q4_0 ";
  const fs::path whole = testing::MakeTempDir("merge-sens-whole");
  ASSERT_EQ(RunCli(job + "--out " + whole.string()).exit_code, 0);
  const std::vector<fs::path> dirs = {testing::MakeTempDir("merge-sens-0"), testing::MakeTempDir("merge-sens-1")};
  const fs::path merged = testing::MakeTempDir("merge-sens-merged");
  EXPECT_NE(RunRound(job, dirs, merged)
                .find("(proxy 3 windows) -> " + merged.string() +
                      "; next: run the same shard "
                      "commands again with --merged"),
            std::string::npos);
  // Shard 0 in round 2, shard 1 still at round 1: merge says so.
  ASSERT_EQ(RunCli(job + "--shard 0/2 --merged " + merged.string() + " --out " + dirs[0].string()).exit_code, 0);
  ExpectRefused(Merge(dirs, merged), {"ran the stages \"auto\"", "ran \"proxy\"", "different rounds"});
  EXPECT_NE(RunRound(job, dirs, merged)
                .find("(auto 3 windows) -> " + merged.string() +
                      "; finish with the same "
                      "kvaudit sensitivity command without --shard"),
            std::string::npos);
  const auto idle = RunCli(job + "--shard 0/2 --merged " + merged.string() + " --out " + dirs[0].string());
  EXPECT_NE(idle.out.find("nothing left to shard"), std::string::npos) << idle.out;
  const auto fin = RunCli(job + "--json --out " + merged.string());
  ASSERT_EQ(fin.exit_code, 0) << fin.err;
  testing::ExpectSameResultsTree(merged, whole, 3);
  ExpectRefused(RunCli(job + "--merged " + merged.string() + " --out " + dirs[0].string()),
                {"--merged", "without --shard"});
  // A round 2 against a merge of other windows is refused before anything is computed (--stage
  // full: its parts stage is not merged yet, so this is a second round).
  const std::string other =
      "sensitivity " + kModel + "--ctx 256 --windows 2 --attn-samples 4 --formats q4_0 --stage full ";
  ExpectRefused(RunCli(other + "--shard 0/2 --merged " + merged.string() + " --out " +
                       testing::MakeTempDir("merge-sens-x").string()),
                {"proxy/results.json", "is not the merged proxy stage of 2 windows"});
}

// An audit in shards with a recommendation: round 1 its eval windows, probe units and the
// recommendation's proxy windows; round 2 the parts stage; then the verification rounds; the
// unsharded command into the merged directory resumes them all (computing nothing) and gives the
// unsharded audit's verdicts, results (every stage's) and journals, but the run blocks and the
// directory names.
TEST(MergeCliTest, AnAuditInShardsMergesAndFinishesAsTheUnshardedAudit) {
  const std::string job = "audit " + kModel + testing::BudgetAuditFlags() + " ";
  const testing::FinishedAudit w = testing::BudgetAudit();  // the same job unsharded
  const fs::path& whole = w.dir;
  const std::vector<fs::path> dirs = {testing::MakeTempDir("merge-audit-0"), testing::MakeTempDir("merge-audit-1")};
  const fs::path merged = testing::MakeTempDir("merge-audit-merged");
  const std::string round1 = RunRound(job, dirs, merged);
  EXPECT_NE(round1.find("merged 2 audit shards (eval 2 windows, probe "), std::string::npos) << round1;
  EXPECT_NE(round1.find(", recommend/sensitivity/proxy 2 windows) -> "), std::string::npos) << round1;
  EXPECT_NE(round1.find("; next: run the same shard commands again"), std::string::npos) << round1;
  const std::string round2 = RunRound(job, dirs, merged);
  EXPECT_NE(round2.find("(recommend/sensitivity/auto 2 windows)"), std::string::npos) << round2;
  // Then a round per verification round (the search's points, then what the verdicts call for),
  // until a round has nothing left.
  int rounds = 2;
  for (std::string out = round2; out.find("finish with the same kvaudit audit") == std::string::npos && rounds < 8;) {
    out = RunRound(job, dirs, merged);
    ++rounds;
  }
  EXPECT_GE(rounds, 4) << "at least one verification round";
  const auto fin = RunCli(job + "--out " + merged.string(), 300);
  ASSERT_EQ(fin.exit_code, w.exit_code) << fin.err;
  testing::ExpectSameResultsTree(merged, whole, 3);
  // The final run computed nothing: every verification round's windows were resumed.
  int verify_rounds = 0;
  for (const auto& e : fs::directory_iterator(merged / "recommend")) {
    if (e.path().filename().string().rfind("verify-", 0) != 0) continue;
    const nlohmann::json v = nlohmann::json::parse(ReadFile((e.path() / "eval" / "results.json").string()));
    EXPECT_EQ(v["run"]["windows_resumed"], v["data"]["windows"]) << e.path();
    ++verify_rounds;
  }
  EXPECT_EQ(verify_rounds, rounds - 3);
  for (const char* stage : {"eval", "probe", "recommend/sensitivity/proxy", "recommend/sensitivity/auto"}) {
    EXPECT_EQ(ReadFile((merged / stage / "progress.jsonl").string()),
              ReadFile((whole / stage / "progress.jsonl").string()))
        << stage;
  }
  EXPECT_EQ(testing::ReplaceAll(ReadFile((merged / "gate.xml").string()), merged.string(), "DIR"),
            testing::ReplaceAll(ReadFile((whole / "gate.xml").string()), whole.string(), "DIR"));
  // One shard's first round only, partially: each stage says what it holds.
  const fs::path one = testing::MakeTempDir("merge-audit-one");
  ASSERT_EQ(RunCli(job + "--shard 1/2 --out " + one.string(), 300).exit_code, 0);
  const auto p = RunCli("merge --partial " + one.string() + " --out " + testing::MakeTempDir("merge-audit-p").string());
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("eval partial: 1 of 2 windows (shards finished 1; missing 0)"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("probe partial: "), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("recommend/sensitivity/proxy partial: 1 of 2 windows"), std::string::npos) << p.out;
}

}  // namespace
}  // namespace kvaudit

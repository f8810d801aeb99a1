// examples/k8s (docs/scale-out.md "Kubernetes"). There is no cluster here, so what is
// tested is everything but Kubernetes itself: the manifests agree with the scripts (shard count =
// completions = parallelism, the scripts the containers run are the ones in examples/k8s and the
// image copies them there, the output root is a mounted volume), and shard.sh / merge.sh, run with
// the environment the pods get (JOB_COMPLETION_INDEX 0..N-1, SHARDS, MODEL, DATA, AUDIT_DIR,
// AUDIT_FLAGS), round after round as run.sh drives them, give the unsharded audit's results. Not
// tested: kubectl and run.sh itself, scheduling, the volumes, the image build, pod restarts (the
// kill-and-resume path is tested under Slurm and in cli_merge_test).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "support/budget_audit.h"
#include "support/fixtures.h"
#include "support/results_tree.h"
#include "support/run_cli.h"

namespace kvaudit {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;

const fs::path kExample = testing::RepoDir() / "examples" / "k8s";

// The first capture of `pattern` in `text`, or "" (a test failure) when it is not there.
std::string Find(const std::string& text, const std::string& pattern, const std::string& what) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) {
    ADD_FAILURE() << what << ": /" << pattern << "/ not found";
    return "";
  }
  return m[1].str();
}

// A pod env value: `- name: NAME` then `value: ...` on the next line.
std::string EnvValue(const std::string& yaml, const std::string& name) {
  return Find(yaml, "- name: " + name + "\\s*\\n\\s*value: \"?([^\"\\n]*)\"?", name);
}

TEST(K8sExampleTest, ManifestsAgreeWithTheScripts) {
  const std::string shards = ReadFile((kExample / "audit-shards.yaml").string());
  const std::string merge = ReadFile((kExample / "audit-merge.yaml").string());
  const std::string docker = ReadFile((kExample / "Dockerfile").string());
  ASSERT_FALSE(shards.empty() || merge.empty() || docker.empty());
  EXPECT_EQ(Find(shards, "completionMode: (\\w+)", "completionMode"), "Indexed");
  const std::string n = Find(shards, "\\n  completions: (\\d+)", "completions");
  EXPECT_EQ(Find(shards, "\\n  parallelism: (\\d+)", "parallelism"), n);
  EXPECT_EQ(EnvValue(shards, "SHARDS"), n);
  EXPECT_EQ(EnvValue(merge, "SHARDS"), n);
  for (const char* name : {"MODEL", "DATA", "AUDIT_DIR", "AUDIT_FLAGS"}) {
    EXPECT_EQ(EnvValue(merge, name), EnvValue(shards, name)) << name << ": the merge must see the shards' inputs";
  }
  EXPECT_NE(docker.find("COPY examples/k8s /opt/kvaudit/examples/k8s"), std::string::npos);
  // run.sh renames each round's Jobs by the metadata names: they must be there as it expects.
  const std::string run = ReadFile((kExample / "run.sh").string());
  for (const auto& [yaml, name] : {std::pair{shards, "kvaudit-shards"}, std::pair{merge, "kvaudit-merge"}}) {
    EXPECT_NE(yaml.find(std::string("\n  name: ") + name + "\n"), std::string::npos) << name;
    EXPECT_NE(run.find(std::string("s/name: ") + name + "$/name: " + name + "-r$round/"), std::string::npos) << name;
  }
  EXPECT_NE(run.find("kvaudit: next round"), std::string::npos);
  EXPECT_NE(ReadFile((kExample / "merge.sh").string()).find("echo \"kvaudit: next round\""), std::string::npos);
  for (const auto& [yaml, script] : {std::pair{shards, "shard.sh"}, std::pair{merge, "merge.sh"}}) {
    EXPECT_NE(yaml.find(std::string("command: [\"/opt/kvaudit/examples/k8s/") + script + "\"]"), std::string::npos)
        << script;
    EXPECT_TRUE(fs::exists(kExample / script));
    const std::string audit_dir = EnvValue(yaml, "AUDIT_DIR");
    EXPECT_NE(yaml.find("mountPath: " + audit_dir + "}"), std::string::npos)
        << "AUDIT_DIR " << audit_dir << " is not a volume";
  }
}

// A --budget audit, so that the rounds run: as run.sh does, the Indexed Job's pods of a round one
// after the other, then the merge, until the merge prints `kvaudit: finished`.
TEST(K8sExampleTest, TheScriptsRunAsThePodsWouldAndGiveTheUnshardedAudit) {
  const std::string flags = testing::BudgetAuditFlags();
  const std::string env = "KVAUDIT=" + testing::KvauditBinary().string() +
                          " MODEL=" + testing::BundledModelDir().string() +
                          " DATA=" + (testing::RepoDir() / "data" / "eval-docs.jsonl").string() + " THREADS=2" +
                          " AUDIT_FLAGS='" + flags + "' SHARDS=2 AUDIT_DIR=";
  const fs::path root = testing::MakeTempDir("k8s-audit");
  int rounds = 0;
  for (std::string last; last != "kvaudit: finished\n" && rounds < 8;) {
    ++rounds;
    for (int i = 0; i < 2; ++i) {
      const auto r = testing::RunShell("JOB_COMPLETION_INDEX=" + std::to_string(i) + " " + env + root.string() + " " +
                                           (kExample / "shard.sh").string(),
                                       300);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find("shard " + std::to_string(i) + "/2: "), std::string::npos) << r.out;
    }
    const auto m = testing::RunShell(env + root.string() + " " + (kExample / "merge.sh").string(), 300);
    ASSERT_EQ(m.exit_code, 0) << m.err;  // a failing verdict is exit 0 here; gate.xml holds it
    last = m.out.substr(m.out.rfind('\n', m.out.size() - 2) + 1);
    ASSERT_TRUE(last == "kvaudit: next round\n" || last == "kvaudit: finished\n") << m.out;
  }
  EXPECT_GE(rounds, 4);  // eval + probe + proxy, the parts stage, verification, nothing left
  const fs::path whole = testing::BudgetAudit().dir;  // the same audit unsharded
  const fs::path merged = root / "audit";
  // the audit's, eval, probe, recommend, the sensitivity's three, the verification rounds'
  testing::ExpectSameResultsTree(merged, whole, 8);
  EXPECT_TRUE(fs::exists(merged / "report.html") && fs::exists(merged / "gate.xml"));
  // Without its index the script refuses in one line (not a silent shard 0).
  const auto bad = testing::RunShell(env + root.string() + " " + (kExample / "shard.sh").string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("JOB_COMPLETION_INDEX"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace kvaudit

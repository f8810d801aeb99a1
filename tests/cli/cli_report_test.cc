// kvaudit report as a user runs it on partial results: an eval run alone, a probe run alone, an
// interrupted audit, two directories side by side, markdown for a pull request; and the one-line
// exit-2 errors for what is not kvaudit output. (The full audit's page in a real browser:
// tests/browser/report_browser_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/fixtures.h"
#include "support/html_strict.h"
#include "support/run_cli.h"

namespace kvaudit::testing {
namespace {

namespace fs = std::filesystem;

const std::string kModel = "--model " + BundledModelDir().string() + " --data " +
                           (RepoDir() / "data" / "eval-docs.jsonl").string() + " --threads 2 ";

// One small eval and one small probe run, shared by the tests of this file (each test a process:
// gtest_discover_tests), made on first use in a directory of their own.
struct SmallRuns {
  fs::path root, eval, probe;
};

const SmallRuns& Runs() {
  static const SmallRuns runs = [] {
    SmallRuns r;
    r.root = MakeTempDir("report-cli");
    r.eval = r.root / "eval", r.probe = r.root / "probe";
    const CliResult e = RunCli("eval " + kModel +
                               "--kv k=q8_0,v=q8_0 --kv k=q4_0,v=q4_0 --ctx 128 --windows 2 "
                               "--attn-samples 2 --out " +
                               r.eval.string());
    EXPECT_EQ(e.exit_code, 0) << e.err;
    const CliResult p = RunCli("probe " + kModel +
                               "--kv k=q4_0,v=q4_0 --family needle --lengths 128 --depths 0,50,100 "
                               "--variant code --out " +
                               r.probe.string());
    EXPECT_EQ(p.exit_code, 0) << p.err;
    return r;
  }();
  return runs;
}

// Runs kvaudit report and returns the page it wrote (empty on failure, with a gtest failure).
std::string Report(const std::string& args, const fs::path& page) {
  const CliResult r = RunCli("report " + args, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("report: " + page.string()), std::string::npos) << r.out;
  const std::string html = ReadFile(page.string());
  const std::vector<std::string> errors = HtmlParseErrors(html);
  EXPECT_TRUE(errors.empty()) << errors.size() << " HTML parse errors, first: " << errors.front();
  return html;
}

TEST(ReportCliTest, AnEvalRunAloneRendersWhatIsThereAndSaysWhatIsMissing) {
  const std::string html = Report(Runs().eval.string(), Runs().eval / "report.html");
  EXPECT_NE(html.find("id=\"memory-table\""), std::string::npos);
  EXPECT_NE(html.find("k=q4_0,v=q4_0"), std::string::npos);
  EXPECT_NE(html.find("id=\"kld-vs-context\""), std::string::npos);
  EXPECT_NE(html.find("no probe results: this is an eval run"), std::string::npos);
  EXPECT_NE(html.find("No probe results in these directories"), std::string::npos);
  EXPECT_NE(html.find("No sensitivity or recommendation"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
}

TEST(ReportCliTest, AProbeRunAloneRendersItsNeedleGrid) {
  const fs::path page = Runs().root / "probe.html";
  const std::string html = Report(Runs().probe.string() + " --out " + page.string(), page);
  EXPECT_NE(html.find("class=\"grid\""), std::string::npos);
  EXPECT_NE(html.find("no eval results: this is a probe run"), std::string::npos);
  EXPECT_NE(html.find("No eval results: no curves"), std::string::npos);
  // The per-cell attribution lists only the cells where the configuration and the baseline differ;
  // the note counts the others (3 cells here: depths 0, 50, 100 at 128 tokens).
  const nlohmann::json j = nlohmann::json::parse(ReadFile((Runs().probe / "results.json").string()));
  size_t differ = 0;
  for (const nlohmann::json& row : j["probes"])
    differ += row["cache_induced"].get<int>() + row["recovered"].get<int>() > 0;
  ASSERT_EQ(j["probes"].size(), 3u);
  const size_t table = html.find("id=\"probes-0\"");
  ASSERT_NE(table, std::string::npos);
  const std::string rows = html.substr(table, html.find("</table>", table) - table);
  size_t listed = 0;
  for (size_t at = rows.find("<tr>"); at != std::string::npos; at = rows.find("<tr>", at + 1)) ++listed;
  EXPECT_EQ(listed, differ + 1) << rows;  // + the header row
  if (differ < 3) {
    EXPECT_NE(
        html.find(std::to_string(3 - differ) +
                  " of 3 cells are not listed: there the configuration and the baseline agree on every instance."),
        std::string::npos);
  }
}

TEST(ReportCliTest, AnInterruptedAuditShowsItsFinishedStages) {
  const fs::path audit = Runs().root / "interrupted-audit";
  fs::create_directories(audit / "eval");
  fs::copy_file(Runs().eval / "results.json", audit / "eval" / "results.json", fs::copy_options::overwrite_existing);
  fs::create_directories(audit / "probe");
  std::ofstream(audit / "probe" / "progress.jsonl") << "{\"kvaudit_probe_progress\":1}\n";
  const std::string html = Report(audit.string(), audit / "report.html");
  EXPECT_NE(html.find("the audit did not finish (no results.json)"), std::string::npos);
  EXPECT_NE(html.find("probe results (probe/results.json) are not there"), std::string::npos);
  EXPECT_NE(html.find("id=\"memory-table\""), std::string::npos);

  // An eval that has only its journal so far: nothing to draw yet, and the page says so.
  const fs::path eval = Runs().root / "interrupted-eval";
  fs::create_directories(eval);
  fs::copy_file(Runs().eval / "progress.jsonl", eval / "progress.jsonl", fs::copy_options::overwrite_existing);
  const std::string early = Report(eval.string(), eval / "report.html");
  EXPECT_NE(early.find("the run did not finish (progress.jsonl but no results.json)"), std::string::npos);
  EXPECT_NE(early.find("No eval results: no curves"), std::string::npos);
}

TEST(ReportCliTest, SeveralDirectoriesSideBySideAndMarkdown) {
  const fs::path page = Runs().root / "compare.html";
  const std::string html = Report(Runs().eval.string() + " " + Runs().probe.string() + " --out " + page.string(), page);
  EXPECT_NE(html.find("eval · k=q4_0,v=q4_0"), std::string::npos);
  EXPECT_NE(html.find("<th>probe</th>"), std::string::npos);  // run metadata: one column per directory
  const CliResult two = RunCli("report " + Runs().eval.string() + " " + Runs().probe.string());
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("several directories need --out FILE"), std::string::npos) << two.err;

  const CliResult md = RunCli("report " + Runs().eval.string() + " --format md");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| configuration | bytes/token | mean KLD (nats) |"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("`k=q4_0,v=q4_0` | 1152\u00a0B |"), std::string::npos) << md.out;
}

TEST(ReportCliTest, WhatIsNotKvauditOutputIsOneLineAndExitTwo) {
  const fs::path root = MakeTempDir("report-bad");
  fs::create_directories(root / "empty");
  fs::create_directories(root / "broken");
  std::ofstream(root / "broken" / "results.json") << "{\"kind\": \"eval\", ";
  fs::create_directories(root / "alien");
  std::ofstream(root / "alien" / "results.json") << "{\"kind\": \"benchmark\"}";
  const struct {
    std::string args, message;
  } cases[] = {
      {(root / "missing").string(), "is not a directory"},
      {(root / "empty").string(), "is not a kvaudit output directory (no results.json, no progress.jsonl)"},
      {(root / "broken").string(), "results.json is not a JSON object"},
      {(root / "alien").string(), "has kind 'benchmark', which kvaudit report does not know"},
      {(root / "empty").string() + " --format pdf", "--format"},
  };
  for (const auto& c : cases) {
    const CliResult r = RunCli("report " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(root / "empty" / "report.html"));
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace kvaudit::testing

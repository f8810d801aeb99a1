// Rules of the source tree that a compiler does not check, read from every file of src/ (and, for
// comments, tests/, bench/ and tools/):
//  - no Expected read without a check: a parse or load dereferenced where it is called
//    (`*CacheConfig::Parse(spec)`, `ParseX(...).value()`) turns a bad input into an internal
//    error instead of the one-line exit 2 the caller owes the user;
//  - a cache spec is parsed where a flag or a file gives it, nowhere else: kv/config holds the
//    parser, run/kv_configs.cc reads --kv/--baseline, cli/deploy_command.cc deploy's --kv,
//    decide/sensitivity/sensitivity.cc sensitivity's --baseline; everything after them composes
//    CacheConfig values (Uniform, WithLayers) instead of printing a spec and parsing it back;
//  - no issue-tracker references in comments (the word issue or scope and a number): the tracker is not in the
//    repository, so a comment says the reason or names the doc section instead.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/fixtures.h"

namespace kvaudit::testing {
namespace {

struct Finding {
  std::string where;  // path:line
  std::string line;
};

// An Expected-returning factory read in place: `*X::ParseY(`, `*ParseY(`, or `...Parse(...).value()`
// / `->` on the same call. Names: Parse*, Load*, Make*, From* (the project's fallible factories).
const std::regex& UncheckedRead() {
  static const std::regex r(
      R"((\*\s*([A-Z]\w*::)?(Parse|Load|Make|From)\w*\()|(\b([A-Z]\w*::)?(Parse|Load)\w*\([^()]*\)\s*(\.value\(\)|->)))");
  return r;
}

// A cache spec parsed from text (CacheConfig::Parse / FromArgument).
const std::regex& SpecParse() {
  static const std::regex r(R"(\bCacheConfig::(Parse|FromArgument)\()");
  return r;
}

// The files where a flag or a file gives a spec (and the parser itself).
bool IsSpecBoundary(const std::string& where) {
  // policy_toml.cc: a policy file's relative_to.
  for (const char* allowed : {"src/kv/config/", "src/run/kv_configs.cc", "src/cli/deploy_command.cc",
                              "src/decide/sensitivity/sensitivity.cc", "src/decide/acceptance/policy_toml.cc"}) {
    if (where.rfind(allowed, 0) == 0) return true;
  }
  return false;
}

// A tracker reference inside a // comment (toml++'s upstream bug numbers are named as such).
const std::regex& TrackerReference() {
  static const std::regex r(R"(//.*\b([Ii]ssues? \d+|[Ss]cope \d+)\b)");
  return r;
}

std::vector<Finding> Scan(const std::string& name, const std::string& text, const std::regex& rule) {
  std::vector<Finding> out;
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (line.find("upstream") != std::string::npos || line.find("toml++ issue") != std::string::npos) continue;
    if (std::regex_search(line, rule)) out.push_back({name + ":" + std::to_string(n), line});
  }
  return out;
}

std::vector<Finding> ScanTree(const std::vector<std::string>& dirs, const std::regex& rule) {
  std::vector<Finding> out;
  for (const std::string& d : dirs) {
    const std::filesystem::path root = RepoDir() / d;
    EXPECT_TRUE(std::filesystem::is_directory(root)) << root;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
      std::ifstream in(e.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string rel = std::filesystem::relative(e.path(), RepoDir()).generic_string();
      for (Finding& f : Scan(rel, text.str(), rule)) out.push_back(std::move(f));
    }
  }
  return out;
}

std::string Describe(const std::vector<Finding>& fs) {
  std::string s;
  for (const Finding& f : fs) s += f.where + ": " + f.line + "\n";
  return s;
}

TEST(SourceRules, TheRulesCatchWhatTheyAreFor) {
  const std::regex& u = UncheckedRead();
  EXPECT_EQ(Scan("a.cc", "  const CacheConfig p = *CacheConfig::Parse(spec);", u).size(), 1u);
  EXPECT_EQ(Scan("a.cc", "  f(*ParseBudget(text));", u).size(), 1u);
  EXPECT_EQ(Scan("a.cc", "  auto x = CacheConfig::Parse(spec).value();", u).size(), 1u);
  EXPECT_EQ(Scan("a.cc", "  n = LoadPolicy(name)->thresholds.size();", u).size(), 1u);
  EXPECT_TRUE(Scan("a.cc", "  KV_ASSIGN_OR_RETURN(const CacheConfig p, CacheConfig::Parse(spec));", u).empty());
  EXPECT_TRUE(Scan("a.cc", "  auto p = CacheConfig::Parse(spec);\n  if (!p) return p.error();", u).empty());

  // The examples are assembled so that this file itself holds no tracker reference.
  const std::regex& t = TrackerReference();
  const std::string issue = std::string("iss") + "ue", scope = std::string("sco") + "pe";
  EXPECT_EQ(Scan("a.h", "// Storage follows use (" + issue + " 10): nothing", t).size(), 1u);
  EXPECT_EQ(Scan("a.h", "  int x;  // see " + scope + " 4", t).size(), 1u);
  EXPECT_TRUE(Scan("a.h", "// Storage follows use (docs/architecture.md \"Cache memory\")", t).empty());
  EXPECT_TRUE(Scan("a.h", "// upstream marzer/tomlplusplus " + issue + "s 190 and 295", t).empty());
}

TEST(SourceRules, NoExpectedIsReadWithoutACheck) {
  const std::vector<Finding> f = ScanTree({"src"}, UncheckedRead());
  EXPECT_TRUE(f.empty()) << "an Expected read where it is made (check ok() or use KV_ASSIGN_OR_RETURN):\n"
                         << Describe(f);
}

TEST(SourceRules, ACacheSpecIsParsedOnlyWhereAFlagGivesIt) {
  EXPECT_EQ(Scan("a.cc", "  auto p = CacheConfig::Parse(spec);", SpecParse()).size(), 1u);
  EXPECT_TRUE(Scan("a.cc", "  const CacheConfig c = CacheConfig::Uniform(s);", SpecParse()).empty());
  std::vector<Finding> f = ScanTree({"src"}, SpecParse());
  std::erase_if(f, [](const Finding& x) { return IsSpecBoundary(x.where); });
  EXPECT_TRUE(f.empty()) << "a spec printed and parsed back (compose CacheConfig values instead):\n" << Describe(f);
}

TEST(SourceRules, NoCommentNamesTheIssueTracker) {
  const std::vector<Finding> f = ScanTree({"src", "tests", "bench", "tools"}, TrackerReference());
  EXPECT_TRUE(f.empty()) << "comments that cite the tracker (say the reason or the doc section):\n" << Describe(f);
}

}  // namespace
}  // namespace kvaudit::testing

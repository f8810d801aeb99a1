#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace kvaudit::testing {

std::filesystem::path RepoDir() {
  if (const char* s = std::getenv("KVAUDIT_SOURCE_DIR"); s && *s) return s;
  return KVAUDIT_SOURCE_DIR;
}

std::filesystem::path FixturesDir() {
  if (const char* s = std::getenv("KVAUDIT_FIXTURES"); s && *s) return std::filesystem::absolute(s);
  return std::filesystem::weakly_canonical(RepoDir() / ".." / "shared");
}

std::filesystem::path BundledModelDir() { return RepoDir() / "models" / "kvq-code-16m"; }

std::filesystem::path KvauditBinary() { return KVAUDIT_BINARY; }

std::string BundledJobFlags() {
  return "--model " + BundledModelDir().string() + " --data " + (RepoDir() / "data" / "eval-docs.jsonl").string() +
         " --threads 2 ";
}

std::filesystem::path Fixture(const std::string& relative) {
  auto p = FixturesDir() / relative;
  if (!std::filesystem::exists(p)) {
    ADD_FAILURE() << "missing fixture " << p << " (set KVAUDIT_FIXTURES to the shared fixtures folder)";
  }
  return p;
}

std::filesystem::path MakeTempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  auto p = std::filesystem::temp_directory_path() /
           ("kvaudit-" + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

std::vector<std::filesystem::path> FilesIn(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.is_regular_file()) out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  EXPECT_FALSE(out.empty()) << "no files in " << dir;
  return out;
}

std::vector<uint8_t> ReadBytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void ReplayCorpus(const std::filesystem::path& dir, const CorpusParse& parse) {
  int accepted = 0, rejected = 0;
  for (const auto& p : FilesIn(dir)) {
    const std::string name = p.filename().string();
    SCOPED_TRACE(name);
    const std::vector<uint8_t> bytes = ReadBytes(p);
    const auto [ok, what] = parse(name, std::string(bytes.begin(), bytes.end()));
    EXPECT_EQ(ok, name.rfind("bad_", 0) != 0) << (ok ? "accepted: " : "rejected: ") << what;
    ++(ok ? accepted : rejected);
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace kvaudit::testing

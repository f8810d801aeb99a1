#include "support/fixtures.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

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

}  // namespace kvaudit::testing

#include "support/served_pids.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/child_process.h"
#include "support/fixtures.h"

namespace kvaudit::testing {

std::string PidRecordingTemplate(const std::filesystem::path& pids, const std::string& server_words,
                                 const std::string& before) {
  return "sh -c 'echo $$ >> " + pids.string() + "; " + before + "exec " + server_words + "'";
}

std::string KvauditServeTemplate(const std::filesystem::path& pids, const std::string& kv, const std::string& before) {
  return PidRecordingTemplate(pids,
                              KvauditBinary().string() + " serve --model " + BundledModelDir().string() +
                                  " --threads 1 --port {port} --kv " + kv,
                              before);
}

std::vector<pid_t> RecordedPids(const std::filesystem::path& pids) {
  std::vector<pid_t> out;
  std::ifstream in(pids);
  for (pid_t p; in >> p;) out.push_back(p);
  return out;
}

void ExpectAllServersGone(const std::filesystem::path& pids, size_t expected) {
  const std::vector<pid_t> all = RecordedPids(pids);
  EXPECT_EQ(all.size(), expected);
  for (pid_t p : all) EXPECT_TRUE(ProcessGone(p, 10000)) << "server " << p << " is still running";
}

std::string ShellQuoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += (c == '$' || c == '"' || c == '\\' || c == '`') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

}  // namespace kvaudit::testing

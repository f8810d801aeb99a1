#include "support/run_cli.h"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support/fixtures.h"

namespace kvaudit::testing {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

CliResult RunCli(const std::string& args, int timeout_s) {
  const std::filesystem::path dir = MakeTempDir("cli");
  const std::string cmd = "timeout " + std::to_string(timeout_s) + " " + KvauditBinary().string() + " " + args +
                          " >" + (dir / "out").string() + " 2>" + (dir / "err").string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile((dir / "out").string());
  r.err = ReadFile((dir / "err").string());
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace kvaudit::testing

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

namespace {

CliResult Run(const std::string& command_line) {  // command_line: without redirections
  const std::filesystem::path dir = MakeTempDir("cli");
  const std::string cmd = command_line + " >" + (dir / "out").string() + " 2>" + (dir / "err").string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile((dir / "out").string());
  r.err = ReadFile((dir / "err").string());
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace

CliResult RunCli(const std::string& args, int timeout_s) {
  return Run("timeout " + std::to_string(timeout_s) + " " + KvauditBinary().string() + " " + args);
}

CliResult RunShell(const std::string& command, int timeout_s) {
  // `timeout` runs one program: the command line goes to bash under it, which execs a last simple
  // command, so the timeout's signal reaches it.
  std::string quoted = "'";
  for (char c : command) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return Run("timeout " + std::to_string(timeout_s) + " bash -c " + quoted + "'");
}

}  // namespace kvaudit::testing

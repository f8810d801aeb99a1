// Runs the built kvaudit binary in a subprocess and captures its exit code, stdout and stderr.
#pragma once

#include <string>

namespace kvaudit::testing {

struct CliResult {
  int exit_code = -1;  // -1 when the process did not exit normally (crash, timeout kill)
  std::string out, err;
};

// args are appended to the binary path as given (shell-quoted by the caller where needed).
CliResult RunCli(const std::string& args, int timeout_s = 120);
// Any shell command line (environment assignments, scripts), captured the same way.
CliResult RunShell(const std::string& command, int timeout_s = 120);

std::string ReadFile(const std::string& path);

}  // namespace kvaudit::testing

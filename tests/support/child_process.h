// A child process with its stdout on a pipe, for tests of long-running commands (kvaudit serve):
// bounded reads of its stdout lines, signals, bounded waits; the destructor kills it (SIGKILL) and
// reaps it if it is still running, so a failed test never leaves a server behind.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kvaudit::testing {

class ChildProcess {
 public:
  // argv[0] is the program's path; stderr goes to a file (Stderr()), stdin is /dev/null.
  static std::unique_ptr<ChildProcess> Start(const std::vector<std::string>& argv);
  ~ChildProcess();

  // The next stdout line without its newline; nullopt at EOF or after timeout_ms.
  std::optional<std::string> ReadLine(int timeout_ms);
  void Signal(int sig);
  // The exit code (-1: killed by a signal), or nullopt when it is still running after timeout_ms.
  std::optional<int> WaitExit(int timeout_ms);
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffer_, err_path_;
  std::optional<int> exit_code_;
};

// Whether `pid` is gone within timeout_ms: no such process, or a zombie nobody has reaped (a
// container's init may never reap orphans).
bool ProcessGone(pid_t pid, int timeout_ms);

}  // namespace kvaudit::testing

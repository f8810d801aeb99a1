// A child process driven over two pipes in place of its file descriptors 3 and 4: the layout of
// Chromium's --remote-debugging-pipe, where the browser reads commands from fd 3 and writes
// replies and events to fd 4, each message one JSON text followed by a NUL byte. Every wait is
// bounded by a deadline (poll(2) on the non-blocking ends), so a hung or crashed child becomes an
// error, never a hung test.
// The child leads a process group of its own: Chromium starts helpers (zygotes, renderers,
// utility processes), and Stop() kills and reaps the whole group, so none outlives the test, not
// even as a zombie. For that the calling process becomes a child subreaper (PR_SET_CHILD_SUBREAPER,
// process-wide and kept): orphaned helpers are reparented to it instead of to PID 1. A helper that
// leaves the group (Chromium's crash handler starts a session of its own) is found by a marker in
// its command line, a path only this child's processes name: FindStrays() records them while they
// run (once dead, a process has no command line), and Stop() kills and reaps them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace kvaudit::testing {

using Clock = std::chrono::steady_clock;

struct PipeSpawn {
  std::vector<std::string> argv;  // argv[0] is the executable's path (no PATH search)
  std::vector<std::string> env;   // "NAME=value" entries set over this process's environment
  std::filesystem::path log;      // stdout and stderr are appended here; stdin is /dev/null
  std::string marker;             // a process whose command line contains it is the child's
};

class PipeProcess {
 public:
  // Fails with errno's text when the fork or the exec fails.
  static Expected<std::unique_ptr<PipeProcess>> Spawn(const PipeSpawn& spawn);
  ~PipeProcess() { Stop(std::chrono::milliseconds(0)); }
  PipeProcess(const PipeProcess&) = delete;
  PipeProcess& operator=(const PipeProcess&) = delete;

  // Writes message and its NUL to the child's fd 3.
  Status Write(const std::string& message, Clock::time_point deadline);
  // The next message from the child's fd 4, without its NUL.
  Expected<std::string> Read(Clock::time_point deadline);
  // Records the running processes outside the group that name the marker. Call it once the child
  // is up; Stop() calls it again.
  void FindStrays();
  // Closes both pipes, gives the leader `grace` to exit, then SIGKILLs the whole group and the
  // strays, and reaps them (at most 7 s more). Idempotent.
  void Stop(std::chrono::milliseconds grace);

  pid_t pid() const { return pid_; }  // the leader (and group id); kept after Stop for tests
  bool stopped() const { return stopped_; }
  const std::string& exit_status() const { return exit_status_; }  // "exit 0", "signal 9" after Stop

 private:
  PipeProcess() = default;
  bool WaitExited(std::chrono::milliseconds grace) const;  // polls without reaping
  void KillGroup();                                        // kills and reaps the group, bounded
  void ReapStrays();

  pid_t pid_ = -1;
  int to_child_ = -1;    // our end of the child's fd 3
  int from_child_ = -1;  // our end of the child's fd 4
  bool stopped_ = false;
  std::string marker_;
  std::vector<pid_t> strays_;
  std::string exit_status_;
  // Bytes read but not yet returned: [start_, size) of buffer_; scanned_ marks how far a NUL was
  // looked for, so a long message arriving in many reads is scanned once.
  std::string buffer_;
  size_t start_ = 0, scanned_ = 0;
};

}  // namespace kvaudit::testing

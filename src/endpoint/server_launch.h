// Starting an engine's own server for one cache configuration (`--serve-cmd`; docs/endpoints.md
// "Servers kvaudit starts"), so that a job measures what the engine really runs:
//
//   --serve-cmd 'llama-server -m model.gguf --port {port} -ctk {k} -ctv {v} -fa on'
//
// The template is split into words as a shell would split them (quotes and backslashes; no
// expansion, no pipes or redirections: wrap such a command in `sh -c '... exec SERVER ...'`), the
// placeholders are filled in per configuration, and the program is executed directly, so the
// process kvaudit watches is the server itself:
// - its own process group (the terminal's Ctrl-C reaches kvaudit, which stops it);
// - PR_SET_PDEATHSIG: it gets SIGKILL when kvaudit dies, even of SIGKILL (processes the server
//   forks itself are its own business: llama-server forks none);
// - SIGINT/SIGTERM of kvaudit kill its group (run/interrupt.h), and so does Stop() on every
//   other way out (success, an error), from the destructor;
// - stdout and stderr go to a log file, named in every error about it.
// Ready means GET /v1/models answers 2xx (llama-server answers 503 while it loads the model;
// vLLM, SGLang and kvaudit serve answer once they serve), within a bounded wait that stops early
// when the server exits.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kvaudit {

// The placeholders a template may hold: {port} (required), {k} and {v} (the configuration's K and
// V formats, as the engine spells them), {name} (the configuration's name in results).
inline const std::vector<std::string> kServePlaceholders = {"port", "k", "v", "name"};

// The words of `text` as a POSIX shell splits them: blanks separate, '...' is literal, "..." keeps
// blanks and takes \" \\ \$ \` escapes, a backslash outside quotes escapes the next character.
// An unquoted | & ; < > ( ) $ or ` is refused (no shell runs it), as is an unclosed quote or a
// template with no words. Errors name `flag`.
Expected<std::vector<std::string>> SplitServeCommand(std::string_view text, std::string_view flag);

// The words with every {name} replaced by values.at(name) (a name: lower-case letters and _; other
// braces are left as they are, e.g. a JSON argument). A {name} not in kServePlaceholders, or
// one that values lacks, is BadInput naming the template; so is a template without {port}.
Expected<std::vector<std::string>> FillServeCommand(const std::vector<std::string>& words,
                                                    const std::map<std::string, std::string>& values,
                                                    std::string_view flag);

struct LaunchOptions {
  std::string name;               // the configuration, for messages
  std::vector<std::string> argv;  // filled: argv[0] is a path or a program found on PATH
  int port = 0;                   // where it listens (the {port} given to it)
  std::string log_path;           // its stdout and stderr (created or truncated)
  double ready_timeout_s = 600;   // the wait for GET /v1/models
  double stop_grace_s = 10;       // SIGTERM, then SIGKILL after this
};

class LaunchedServer {
 public:
  // Started (not yet ready: WaitReady), or one line: the program not found, no process.
  static Expected<std::unique_ptr<LaunchedServer>> Spawn(const LaunchOptions& options);
  // Ready, or one line: the server exited (its status and its log's last line) or was not ready
  // in time (then it is stopped). Servers spawned together load at once; wait for each in turn.
  Status WaitReady();
  ~LaunchedServer();  // Stop()
  LaunchedServer(const LaunchedServer&) = delete;
  LaunchedServer& operator=(const LaunchedServer&) = delete;

  // SIGTERM to its process group, SIGKILL after the grace period, reaped. Idempotent.
  void Stop();
  pid_t pid() const { return pid_; }
  int port() const { return options_.port; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(options_.port); }
  const LaunchOptions& options() const { return options_; }

 private:
  explicit LaunchedServer(LaunchOptions o) : options_(std::move(o)) {}
  // Whether it is still running (reaps it, and records its status, when it is not).
  bool Running();

  LaunchOptions options_;
  pid_t pid_ = -1;
  int status_ = 0;  // waitpid's, once reaped
  bool reaped_ = false;
};

// A loopback TCP port nothing listens on right now (bound to port 0, read back, released).
Expected<int> FreeLoopbackPort();

// The last non-empty line of a file (at most its last 4 KiB read), "" when there is none.
std::string LastLogLine(const std::string& path);

}  // namespace kvaudit

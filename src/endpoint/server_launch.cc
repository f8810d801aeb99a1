#include "endpoint/server_launch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "endpoint/http_client.h"
#include "run/interrupt.h"

namespace kvaudit {
namespace {

using Clock = std::chrono::steady_clock;

// A word of a template, being built, and whether any quote made it (so '' is one empty word).
struct Word {
  std::string text;
  bool quoted = false;
};

Error RefuseShell(char c, std::string_view text, std::string_view flag) {
  return BadInput(std::string(flag) + " '" + std::string(text) + "': '" + std::string(1, c) +
                  "' needs a shell, and the command runs without one; hint: quote it, or wrap the command in "
                  "sh -c '... exec SERVER ...'");
}

// Appends text[i+1 ..] up to the closing quote; returns the index of the closing quote, or npos
// (then *shell is the unescaped $ or ` met inside "...", or 0 when the quote is not closed).
size_t QuotedPart(std::string_view text, size_t i, std::string* out, char* shell) {
  const char quote = text[i];
  *shell = 0;
  for (size_t j = i + 1; j < text.size(); ++j) {
    const char c = text[j];
    if (c == quote) return j;
    if (quote == '"' && (c == '$' || c == '`')) {
      *shell = c;
      return std::string_view::npos;
    }
    if (quote == '"' && c == '\\' && j + 1 < text.size() &&
        std::string_view("\"\\$`").find(text[j + 1]) != std::string_view::npos) {
      *out += text[++j];
      continue;
    }
    *out += c;
  }
  return std::string_view::npos;
}

// argv[0] as execv takes it: a path as given, or the first executable of that name on PATH.
Expected<std::string> ResolveProgram(const std::string& program, const std::string& name) {
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) == 0) return program;
    return BadInput("--serve-cmd for " + name + ": " + program + " is not an executable file; hint: check the path");
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (!dirs.empty()) {
    const size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    dirs = colon == std::string_view::npos ? "" : dirs.substr(colon + 1);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    struct stat st = {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return BadInput("--serve-cmd for " + name + ": " + program +
                  " is not on PATH; hint: give the server's full path, e.g. /opt/llama.cpp/build/bin/llama-server");
}

std::string StatusText(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped";
}

// The child between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecServer(const char* program, char* const* argv, const char* log, pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGINT, SIG_DFL), ::signal(SIGTERM, SIG_DFL), ::signal(SIGPIPE, SIG_DFL);
  const int in = ::open("/dev/null", O_RDONLY);
  const int out = ::open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in < 0 || out < 0) ::_exit(126);
  ::dup2(in, 0), ::dup2(out, 1), ::dup2(out, 2);
  ::execv(program, argv);
  ::_exit(127);
}

}  // namespace

Expected<std::vector<std::string>> SplitServeCommand(std::string_view text, std::string_view flag) {
  std::vector<std::string> words;
  Word w;
  auto flush = [&] {
    if (!w.text.empty() || w.quoted) words.push_back(std::move(w.text));
    w = {};
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      flush();
    } else if (c == '\'' || c == '"') {
      char shell = 0;
      const size_t end = QuotedPart(text, i, &w.text, &shell);
      if (shell) return RefuseShell(shell, text, flag);
      if (end == std::string_view::npos)
        return BadInput(std::string(flag) + " '" + std::string(text) + "': the quote " + std::string(1, c) +
                        " is not closed; hint: close it");
      w.quoted = true, i = end;
    } else if (c == '\\' && i + 1 < text.size()) {
      w.text += text[++i];
    } else if (std::string_view("|&;<>()$`").find(c) != std::string_view::npos) {
      return RefuseShell(c, text, flag);
    } else {
      w.text += c;
    }
  }
  flush();
  if (words.empty()) return BadInput(std::string(flag) + " is empty; hint: give the server's command line");
  return words;
}

Expected<std::vector<std::string>> FillServeCommand(const std::vector<std::string>& words,
                                                    const std::map<std::string, std::string>& values,
                                                    std::string_view flag) {
  std::vector<std::string> out;
  bool has_port = false;
  for (const std::string& word : words) {
    std::string filled;
    for (size_t i = 0; i < word.size(); ++i) {
      const size_t close = word[i] == '{' ? word.find('}', i) : std::string::npos;
      const bool name = close != std::string::npos && close > i + 1 &&
                        word.find_first_not_of("abcdefghijklmnopqrstuvwxyz_", i + 1) == close;
      if (!name) {  // other braces are the server's (a JSON argument)
        filled += word[i];
        continue;
      }
      const std::string key = word.substr(i + 1, close - i - 1);
      const auto it = values.find(key);
      if (it == values.end()) {
        return BadInput(std::string(flag) + ": {" + key + "} is not a placeholder here; hint: use {port}, {k}, {v} " +
                        "and {name} (docs/endpoints.md)");
      }
      has_port |= key == "port";
      filled += it->second, i = close;
    }
    out.push_back(std::move(filled));
  }
  if (!has_port) {
    return BadInput(std::string(flag) +
                    " has no {port}; hint: kvaudit picks a free port per server, e.g. '... --port {port}'");
  }
  return out;
}

Expected<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Internal("cannot open a socket to find a free port");
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) return Internal("cannot bind a loopback port to find a free one");
  return static_cast<int>(ntohs(addr.sin_port));
}

std::string LastLogLine(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > 4096 ? size - 4096 : 0;
  in.seekg(from);
  std::string tail(static_cast<size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.pop_back();
  const size_t nl = tail.rfind('\n');
  return nl == std::string::npos ? tail : tail.substr(nl + 1);
}

Expected<std::unique_ptr<LaunchedServer>> LaunchedServer::Spawn(const LaunchOptions& o) {
  KV_ASSIGN_OR_RETURN(const std::string program, ResolveProgram(o.argv.at(0), o.name));
  std::vector<std::string> args = o.argv;  // [argc] the words, then execv's null
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::unique_ptr<LaunchedServer> s(new LaunchedServer(o));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Internal("cannot fork to start the server for " + o.name);
  if (pid == 0) ExecServer(program.c_str(), argv.data(), o.log_path.c_str(), parent);
  ::setpgid(pid, pid);  // as the child does: whichever runs first, the group exists before any kill
  s->pid_ = pid;
  if (!KillGroupOnInterrupt(pid)) {
    s->Stop();
    return BadInput("more than " + std::to_string(kMaxWatchedGroups) + " servers at once; hint: test fewer");
  }
  return s;
}

bool LaunchedServer::Running() {
  if (reaped_ || pid_ <= 0) return false;
  const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
  if (r == 0) return true;
  reaped_ = true;
  return false;
}

Status LaunchedServer::WaitReady() {
  EndpointSpec spec{"launched", "http", "127.0.0.1", options_.port, ""};
  HttpOptions http;
  http.max_attempts = 1, http.timeout_s = 10, http.connect_timeout_s = 1, http.max_total_s = 10;
  const HttpClient client(spec, "", http);
  const auto deadline = Clock::now() + std::chrono::duration<double>(options_.ready_timeout_s);
  std::string last;
  while (Clock::now() < deadline) {
    if (!Running()) {
      const std::string tail = LastLogLine(options_.log_path);
      return BadInput("the server for " + options_.name + " " + StatusText(status_) + " before it was ready" +
                      (tail.empty() ? "" : " (its log's last line: " + tail + ")") + "; hint: read " +
                      options_.log_path + " and check --serve-cmd");
    }
    const Expected<nlohmann::json> models = client.Get("/v1/models");
    if (models) return Status::Ok();
    last = models.error().message;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Stop();
  std::ostringstream seconds;
  seconds << options_.ready_timeout_s;
  return BadInput("the server for " + options_.name + " was not ready within " + seconds.str() + " s (" + last +
                  "); hint: raise --serve-timeout, or read " + options_.log_path);
}

void LaunchedServer::Stop() {
  if (pid_ <= 0) return;
  if (Running()) {
    ::kill(-pid_, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::duration<double>(options_.stop_grace_s);
    while (Running() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid_, SIGKILL);  // the group: whatever the server started, and the server if it ignored SIGTERM
  if (!reaped_) ::waitpid(pid_, &status_, 0), reaped_ = true;
  ForgetGroupOnInterrupt(pid_);
  pid_ = -1;
}

LaunchedServer::~LaunchedServer() { Stop(); }

}  // namespace kvaudit

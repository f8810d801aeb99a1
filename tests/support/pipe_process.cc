#include "support/pipe_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

namespace kvaudit::testing {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

int MsLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits for `events` on fd until the deadline: true when ready, false at the deadline.
bool PollFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, MsLeft(deadline));
    if (n > 0) return true;  // ready, or POLLHUP/POLLERR: the read or write that follows says which
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

// In the child between fork and exec: only async-signal-safe calls. Each source fd is first
// copied above 9 (F_DUPFD leaves the copy without FD_CLOEXEC), so dup2 onto 0..4 never meets an
// fd that is already its own target (dup2(fd, fd) would keep FD_CLOEXEC and the exec would drop it).
[[noreturn]] void ExecChild(char* const* argv, char* const* envp, const int sources[5], int error_pipe) {
  setpgid(0, 0);
  int high[5];
  for (int i = 0; i < 5; ++i) high[i] = fcntl(sources[i], F_DUPFD, 10);
  for (int i = 0; i < 5; ++i) dup2(high[i], i);
  for (int i = 0; i < 5; ++i) close(high[i]);
  execve(argv[0], argv, envp);
  const int e = errno;
  (void)!write(error_pipe, &e, sizeof e);
  _exit(127);
}

struct Fds {  // every descriptor Spawn opens, all O_CLOEXEC: no other child inherits one
  int command[2] = {-1, -1}, event[2] = {-1, -1}, exec_error[2] = {-1, -1};
  int null_in = -1, log = -1;
  ~Fds() {
    for (int fd : {command[0], command[1], event[0], event[1], exec_error[0], exec_error[1], null_in, log}) {
      if (fd >= 0) close(fd);
    }
  }
};

Status OpenFds(Fds& f, const std::filesystem::path& log) {
  if (pipe2(f.command, O_CLOEXEC) != 0 || pipe2(f.event, O_CLOEXEC) != 0 || pipe2(f.exec_error, O_CLOEXEC) != 0) {
    return Internal(Errno("pipe2"));
  }
  f.null_in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  f.log = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (f.null_in < 0 || f.log < 0) return Internal(Errno("open " + log.string()));
  return Status::Ok();
}

// This process's environment with `overrides` ("NAME=value") set over it.
std::vector<std::string> MergedEnvironment(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const auto& o : overrides) replaced = replaced || o.rfind(name, 0) == 0;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Whether pid's command line contains marker (a zombie's is empty: it does not).
bool Names(pid_t pid, const std::string& marker) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return cmdline.find(marker) != std::string::npos;
}

std::vector<pid_t> ProcessesNaming(const std::string& marker) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    if (Names(pid, marker)) found.push_back(pid);
  }
  return found;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

Expected<std::unique_ptr<PipeProcess>> PipeProcess::Spawn(const PipeSpawn& spawn) {
  // Chromium's zygotes outlive the browser process by a moment; orphans go to the nearest
  // subreaper, else to PID 1, and a container's PID 1 may never reap them (they stay zombies).
  // As a subreaper this process inherits them, and Stop() reaps them.
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) return Internal(Errno("prctl(PR_SET_CHILD_SUBREAPER)"));
  Fds f;
  KV_RETURN_IF_ERROR(OpenFds(f, spawn.log));
  const std::vector<std::string> env = MergedEnvironment(spawn.env);
  std::vector<char*> args = CStrings(spawn.argv), envp = CStrings(env);  // before fork: the child may not allocate
  const int sources[5] = {f.null_in, f.log, f.log, f.command[0], f.event[1]};
  const pid_t pid = fork();
  if (pid < 0) return Internal(Errno("fork"));
  if (pid == 0) ExecChild(args.data(), envp.data(), sources, f.exec_error[1]);
  setpgid(pid, pid);  // also here, so the group exists before we could signal it
  close(f.exec_error[1]);
  f.exec_error[1] = -1;
  int exec_errno = 0;  // the exec closes the pipe (O_CLOEXEC): EOF means it succeeded
  ssize_t n;
  while ((n = read(f.exec_error[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  if (n == sizeof exec_errno) {
    waitpid(pid, nullptr, 0);
    return BadInput("cannot execute " + spawn.argv[0] + ": " + std::strerror(exec_errno));
  }
  std::unique_ptr<PipeProcess> p(new PipeProcess());
  p->pid_ = pid;
  p->marker_ = spawn.marker;
  std::swap(p->to_child_, f.command[1]);
  std::swap(p->from_child_, f.event[0]);
  fcntl(p->to_child_, F_SETFL, O_NONBLOCK);
  fcntl(p->from_child_, F_SETFL, O_NONBLOCK);
  return p;
}

Status PipeProcess::Write(const std::string& message, Clock::time_point deadline) {
  if (to_child_ < 0) return Internal("the pipe to the child is closed");
  // A write to a pipe whose reader died raises SIGPIPE, which would kill the test binary: block
  // it on this thread for the write, and take a SIGPIPE the write raised off the pending set.
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  const std::string framed = message + '\0';
  size_t done = 0;
  Status status;
  while (done < framed.size() && status.ok()) {
    const ssize_t n = write(to_child_, framed.data() + done, framed.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (errno == EPIPE) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe_only, nullptr, &zero);
      status = Internal("the child closed its command pipe (fd 3)");
    } else if (errno == EAGAIN && !PollFor(to_child_, POLLOUT, deadline)) {
      status = Internal("timed out writing to the child's fd 3");
    } else if (errno != EAGAIN && errno != EINTR) {
      status = Internal(Errno("write to the child's fd 3"));
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return status;
}

Expected<std::string> PipeProcess::Read(Clock::time_point deadline) {
  if (from_child_ < 0) return Internal("the pipe from the child is closed");
  for (;;) {
    const size_t nul = buffer_.find('\0', std::max(start_, scanned_));
    if (nul != std::string::npos) {
      std::string message = buffer_.substr(start_, nul - start_);
      start_ = nul + 1;
      if (start_ > buffer_.size() / 2) {  // compact once half is consumed: each byte moves O(1) times
        buffer_.erase(0, start_);
        start_ = 0;
      }
      scanned_ = start_;
      return message;
    }
    scanned_ = buffer_.size();
    char chunk[1 << 16];
    const ssize_t n = read(from_child_, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
    } else if (n == 0) {
      return Internal("the child closed its event pipe (fd 4): it exited or crashed");
    } else if (errno == EAGAIN && !PollFor(from_child_, POLLIN, deadline)) {
      return Internal("timed out waiting for a message on the child's fd 4");
    } else if (errno != EAGAIN && errno != EINTR) {
      return Internal(Errno("read from the child's fd 4"));
    }
  }
}

bool PipeProcess::WaitExited(std::chrono::milliseconds grace) const {
  const auto deadline = Clock::now() + grace;
  for (;;) {
    siginfo_t info{};
    // WNOWAIT leaves the leader a zombie, so its pid (the group id) stays taken until Stop's
    // group loop has killed what else is in the group.
    if (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void PipeProcess::Stop(std::chrono::milliseconds grace) {
  if (stopped_ || pid_ <= 0) return;
  stopped_ = true;
  for (int* fd : {&to_child_, &from_child_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
  WaitExited(grace);
  FindStrays();  // those started since the last look, while they still have a command line
  for (pid_t p : strays_) {
    if (Names(p, marker_)) kill(p, SIGKILL);  // only while it is one: a recorded pid may be reused
  }
  KillGroup();
  ReapStrays();
}

void PipeProcess::FindStrays() {
  if (marker_.empty()) return;
  for (pid_t p : ProcessesNaming(marker_)) {
    if (getpgid(p) != pid_ && std::find(strays_.begin(), strays_.end(), p) == strays_.end()) strays_.push_back(p);
  }
}

// A killed stray this subreaper inherited is its child: reap it. One that is not ours (ECHILD)
// is someone else's to reap. Bounded: 2 s in all.
void PipeProcess::ReapStrays() {
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  for (pid_t p : strays_) {
    while (waitpid(p, nullptr, WNOHANG) == 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  strays_.clear();
}

// The group, until no process of it is left, zombies included (kill(-group, 0) fails): the kill
// takes helpers that outlived the leader (and the leader if it did not exit), and waitpid reaps
// the leader and the orphans this subreaper inherited. Bounded: 5 s.
void PipeProcess::KillGroup() {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  for (;;) {
    kill(-pid_, SIGKILL);
    int status = 0;
    const pid_t reaped = waitpid(-pid_, &status, WNOHANG);
    if (reaped == pid_) exit_status_ = DescribeWaitStatus(status);
    if (reaped > 0) continue;
    if ((kill(-pid_, 0) != 0 && errno == ESRCH) || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace kvaudit::testing

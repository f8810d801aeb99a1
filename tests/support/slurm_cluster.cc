#include "support/slurm_cluster.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "support/fixtures.h"
#include "support/run_cli.h"

namespace kvaudit::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Runs `script` (sh) under `timeout`, stdout and stderr to one file.
ShellResult Shell(const std::string& script, int timeout_s) {
  const fs::path dir = MakeTempDir("slurm-sh");
  std::ofstream(dir / "cmd.sh") << script << "\n";
  const std::string cmd = "timeout " + std::to_string(timeout_s) + " sh " + (dir / "cmd.sh").string() + " >" +
                          (dir / "out").string() + " 2>&1 </dev/null";
  const int status = std::system(cmd.c_str());
  ShellResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (r.exit_code == 124) r.exit_code = -1;
  r.out = ReadFile((dir / "out").string());
  fs::remove_all(dir);
  return r;
}

bool CanBind(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);  // slurmctld and slurmd listen on every address
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

// A port P with P and P+1 free. Drawn below the kernel's ephemeral range, where no outgoing
// connection (the daemons' own among them) takes a port between this check and the daemons' bind.
int FreePortPair() {
  int low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low;
  std::mt19937 rng(static_cast<unsigned>(getpid()) ^ static_cast<unsigned>(Clock::now().time_since_epoch().count()));
  std::uniform_int_distribution<int> pick(20000, std::max(20001, low - 2));
  for (int i = 0; i < 100; ++i) {
    const int p = pick(rng);
    if (CanBind(p) && CanBind(p + 1)) return p;
  }
  return 0;
}

std::string Tail(const fs::path& file, size_t lines) {
  std::ifstream in(file);
  std::vector<std::string> all;
  for (std::string l; std::getline(in, l);) all.push_back(l);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

// The NUL-separated entries of /proc/PID/<name>.
std::vector<std::string> ProcEntries(const std::string& pid, const char* name) {
  std::ifstream in("/proc/" + pid + "/" + name, std::ios::binary);
  std::vector<std::string> out;
  for (std::string e; std::getline(in, e, '\0');) out.push_back(e);
  return out;
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool Finished(const std::string& state) {
  static const std::vector<std::string> kFinal = {"COMPLETED", "FAILED",        "CANCELLED", "TIMEOUT", "NODE_FAIL",
                                                  "PREEMPTED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"};
  return Contains(kFinal, state);
}

std::string Script() { return (RepoDir() / "scripts" / "slurm-local.sh").string(); }

}  // namespace

std::unique_ptr<SlurmCluster> SlurmCluster::Start(const fs::path& dir) {
  // A busy port (taken between the check and the script's) is refused with exit 2 before
  // anything starts: draw another pair.
  ShellResult r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int port = FreePortPair();
    if (port == 0) break;
    r = Shell("KVAUDIT_SLURM_PORT=" + std::to_string(port) + " bash " + Script() + " start " + dir.string(), 90);
    std::unique_ptr<SlurmCluster> cluster(new SlurmCluster(fs::absolute(dir), port));
    if (r.exit_code == 0) return cluster;
    if (r.exit_code != 2 || r.out.find("is in use") == std::string::npos) {
      ADD_FAILURE() << "slurm-local.sh start " << dir << " failed (exit " << r.exit_code << "):\n"
                    << r.out << cluster->LogTail();
      return nullptr;  // the destructor stops whatever did start
    }
    cluster->stopped_ = true;  // nothing started
  }
  ADD_FAILURE() << "no free port pair for a Slurm cluster: " << r.out;
  return nullptr;
}

SlurmCluster::~SlurmCluster() { Stop(); }

std::string SlurmCluster::Env() const { return "SLURM_CONF=" + (dir_ / "slurm.conf").string() + " "; }

ShellResult SlurmCluster::Run(const std::string& command, int timeout_s) const {
  return Shell("export " + Env() + "\n" + command, timeout_s);
}

std::string SlurmCluster::Submit(const std::string& args, const std::string& env) const {
  const ShellResult r = Run(env + (env.empty() ? "" : " ") + "sbatch --parsable " + args);
  std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
  if (r.exit_code != 0 || id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
    ADD_FAILURE() << "sbatch " << args << " failed (exit " << r.exit_code << "): " << r.out;
    return "";
  }
  return id;
}

std::vector<std::string> SlurmCluster::States(const std::string& job) const {
  const ShellResult r = Run("scontrol -o show job " + job, 30);
  std::vector<std::string> states;
  if (r.exit_code != 0) return states;
  static const std::regex kState(R"((^|\s)JobState=(\S+))");
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kState)) states.push_back(m[2]);
  }
  return states;
}

std::string SlurmCluster::State(const std::string& task) const {
  const auto states = States(task);
  return states.size() == 1 ? states[0] : "";
}

bool SlurmCluster::WaitUntilDone(const std::string& job, std::chrono::seconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    const auto states = States(job);
    if (!states.empty() && std::all_of(states.begin(), states.end(), Finished)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return false;
}

bool SlurmCluster::WaitUntilIdle(std::chrono::seconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    const ShellResult r = Run("squeue -h -o %i", 30);
    if (r.exit_code == 0 && r.out.find_first_not_of(" \n") == std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return false;
}

bool SlurmCluster::WaitForState(const std::string& task, const std::string& state, std::chrono::seconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (State(task) == state) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

bool SlurmCluster::Requeue(const std::string& task) const {
  const ShellResult r = Run("scontrol requeue " + task);
  EXPECT_EQ(r.exit_code, 0) << "scontrol requeue " << task << " refused: " << r.out;
  return r.exit_code == 0;
}

std::vector<pid_t> SlurmCluster::Processes(bool jobs_only, const std::vector<std::string>& args) const {
  const std::string conf = "SLURM_CONF=" + (dir_ / "slurm.conf").string();
  std::vector<pid_t> pids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || std::stoi(pid) == getpid()) continue;
    const auto env = ProcEntries(pid, "environ");
    if (!Contains(env, conf)) continue;
    if (jobs_only &&
        std::none_of(env.begin(), env.end(), [](const std::string& v) { return v.rfind("SLURM_JOB_ID=", 0) == 0; })) {
      continue;
    }
    const auto argv = ProcEntries(pid, "cmdline");
    if (std::all_of(args.begin(), args.end(), [&](const std::string& a) { return Contains(argv, a); })) {
      pids.push_back(std::stoi(pid));
    }
  }
  return pids;
}

std::vector<pid_t> SlurmCluster::JobProcesses(const std::vector<std::string>& args) const {
  return Processes(true, args);
}

std::vector<pid_t> SlurmCluster::DaemonPids() const {
  std::vector<pid_t> pids;
  for (const char* name : {"munged.pid", "slurmctld.pid", "slurmd.pid"}) {
    pid_t pid = 0;
    if (std::ifstream(dir_ / name) >> pid && pid > 0 && kill(pid, 0) == 0) pids.push_back(pid);
  }
  return pids;
}

std::string SlurmCluster::LogTail() const {
  std::string out;
  for (const char* log : {"slurmctld.log", "slurmd.log", "munged.log"}) {
    out += std::string("--- ") + log + " (last lines)\n" + Tail(dir_ / "log" / log, 15);
  }
  return out;
}

void SlurmCluster::Stop() {
  if (stopped_) return;
  stopped_ = true;
  // Without SLURM_CONF in its environment: the script finds the jobs' processes by it.
  const ShellResult r = Shell("bash " + Script() + " stop " + dir_.string(), 120);
  EXPECT_EQ(r.exit_code, 0) << "slurm-local.sh stop " << dir_ << ": " << r.out;
  std::string left;
  for (pid_t p : DaemonPids()) left += " daemon " + std::to_string(p);
  // Anything else with this cluster's SLURM_CONF: slurmctld, slurmd, slurmstepd, job processes.
  for (pid_t p : Processes(false, {})) left += " " + std::to_string(p);
  EXPECT_TRUE(left.empty()) << "left running after the cluster under " << dir_ << " stopped:" << left;
}

}  // namespace kvaudit::testing

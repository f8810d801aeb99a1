// A real single-node Slurm cluster for a test (scripts/slurm-local.sh; docs/scale-out.md "Slurm"):
// started under a directory on a free port pair, driven with the ordinary clients (sbatch, squeue,
// scontrol: no accounting, so no sacct), and always stopped when this goes out of scope (every job
// cancelled first, then the daemons), so a failed test leaves no daemon and no job process behind.
// Every wait is bounded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace kvaudit::testing {

struct ShellResult {
  int exit_code = -1;  // -1 when it did not exit normally (killed by `timeout`)
  std::string out;     // stdout and stderr together
};

class SlurmCluster {
 public:
  // nullptr, with a gtest failure holding the start's output and the daemons' log tails, if the
  // node is not up in time.
  static std::unique_ptr<SlurmCluster> Start(const std::filesystem::path& dir);
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // "SLURM_CONF=DIR/slurm.conf ": the prefix a shell command needs to talk to this cluster.
  std::string Env() const;
  // `sh -c command` with Env() in front, under `timeout`.
  ShellResult Run(const std::string& command, int timeout_s = 60) const;
  // `env sbatch --parsable args` (env: "NAME=value ..." for the job, which gets the submitter's
  // environment): the job id, or "" with a gtest failure.
  std::string Submit(const std::string& args, const std::string& env = "") const;
  // JobState of a job or an array task ("123", "123_4"): PENDING, RUNNING, COMPLETED, FAILED, ...;
  // for an array, one per task record (a still unsplit pending range counts once). Empty when
  // the controller does not know the job.
  std::vector<std::string> States(const std::string& job) const;
  std::string State(const std::string& task) const;
  // Polls until every record of the job is finished (no longer pending, running, completing,
  // requeued...); false at the timeout.
  bool WaitUntilDone(const std::string& job, std::chrono::seconds timeout) const;
  // Polls until squeue lists no job (a chain of jobs that submit the next: all done); false at
  // the timeout.
  bool WaitUntilIdle(std::chrono::seconds timeout) const;
  // Polls until the task's state is `state`; false at the timeout.
  bool WaitForState(const std::string& task, const std::string& state, std::chrono::seconds timeout) const;
  // `scontrol requeue task`: a running task is killed and pending again, a finished one pending.
  // It starts again after the credential lifetime (slurm-local.sh: 10 s); false with a gtest
  // failure if refused.
  bool Requeue(const std::string& task) const;
  // Processes of this cluster's jobs (SLURM_JOB_ID set, this cluster's SLURM_CONF) whose command
  // line holds every one of `args` as a whole argument.
  std::vector<pid_t> JobProcesses(const std::vector<std::string>& args = {}) const;
  // The last lines of the daemons' logs, for failure messages.
  std::string LogTail() const;
  // Cancels every job, stops the daemons, then checks that no daemon and no job process is left
  // (gtest failure otherwise). Idempotent; the destructor calls it.
  void Stop();

  const std::filesystem::path& dir() const { return dir_; }
  int port() const { return port_; }

 private:
  SlurmCluster(std::filesystem::path dir, int port) : dir_(std::move(dir)), port_(port) {}
  std::vector<pid_t> DaemonPids() const;
  // Processes with this cluster's SLURM_CONF (jobs_only: and SLURM_JOB_ID) holding every arg.
  std::vector<pid_t> Processes(bool jobs_only, const std::vector<std::string>& args) const;

  std::filesystem::path dir_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace kvaudit::testing

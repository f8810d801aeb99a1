#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for the scale-out tests (docs/scale-out.md "Slurm"):
# Debian's slurm-wlm and munge, every file (config, munge key and socket,
# state, spool, logs, pid files) under DIR, nothing installed system-wide, ports on localhost.
#   scripts/slurm-local.sh start DIR   generate DIR/slurm.conf, start munged, slurmctld, slurmd;
#                                      wait (at most 30 s) until the node is idle; on failure
#                                      stop whatever did start
#   scripts/slurm-local.sh stop DIR    cancel every job and wait (at most 30 s) until none is left,
#                                      then stop the three daemons (by their pid files)
# Then: SLURM_CONF=DIR/slurm.conf sbatch ... . Ports: KVAUDIT_SLURM_PORT (slurmctld, default
# 16817) and the next one (slurmd); both must be free (tests pick a free pair: two clusters on one
# machine must not share ports). Runs as root (the CI machine's user): SlurmUser=root, and
# proctrack/linuxproc + task/none, so no cgroup setup is needed.
set -euo pipefail
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
port=${KVAUDIT_SLURM_PORT:-16817}

# stop_pids FILE...: TERM each, wait for all to go (bounded: 10 s), then KILL the rest; the pid
# files are removed, so a second stop cannot signal an unrelated process that reused a pid.
stop_pids() {
  local f pids=()
  for f in "$@"; do [ -f "$f" ] && pids+=("$(cat "$f")"); done
  if [ ${#pids[@]} -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "${pids[@]}" 2>/dev/null || break; sleep 0.1; done
    kill -9 "${pids[@]}" 2>/dev/null || true
  fi
  rm -f "$@"
}

# The pids of this cluster's job processes and step daemons: slurmstepd outlives slurmd by design
# (a restarted slurmd takes its jobs back), so stopping the daemons alone would leave jobs running.
# Both carry this cluster's SLURM_CONF; a job process also has SLURM_JOB_ID (which our own
# clients here do not).
job_pids() {
  local conf=$1 p env
  for p in /proc/[0-9]*; do
    env=$({ tr '\0' '\n' <"$p/environ"; } 2>/dev/null) || continue
    grep -qx "SLURM_CONF=$conf" <<<"$env" || continue
    if [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || grep -q '^SLURM_JOB_ID=' <<<"$env"; then
      echo "${p#/proc/}"
    fi
  done
}

stop_cluster() {
  local conf=$dir/slurm.conf
  if [ -f "$conf" ] && [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    # Every job of this cluster (all users: it is ours alone), then wait until squeue lists none,
    # completing ones included: their processes are gone then.
    local jobs
    mapfile -t jobs < <(SLURM_CONF=$conf squeue -h -o %A 2>/dev/null)
    [ ${#jobs[@]} -eq 0 ] || SLURM_CONF=$conf scancel --quiet "${jobs[@]}" 2>/dev/null || true
    for _ in $(seq 1 300); do
      [ -z "$(SLURM_CONF=$conf squeue -h -o %A 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  # Both daemons at once (each takes about 2 s to shut down), munged after them: they authenticate
  # through it to the last.
  stop_pids "$dir/slurmd.pid" "$dir/slurmctld.pid"
  stop_pids "$dir/munged.pid"
  # Whatever a wedged cluster left behind (bounded: the KILL is not refused to root).
  local left
  mapfile -t left < <(job_pids "$conf")
  if [ ${#left[@]} -gt 0 ]; then
    echo "slurm-local: killing job processes left behind: ${left[*]}" >&2
    kill -9 "${left[@]}" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "${left[@]}" 2>/dev/null || break; sleep 0.1; done
  fi
}

port_free() {  # port_free PORT: nothing listens on it (TCP, any address); unchecked without ss
  command -v ss >/dev/null || return 0
  ! ss -Htln "sport = :$1" | grep -q .
}

case "$cmd" in
  start)
    command -v slurmctld >/dev/null || { echo "$0: slurmctld not found; hint: bash scripts/setup.sh installs slurm-wlm and munge" >&2; exit 2; }
    for p in "$port" $((port + 1)); do
      port_free "$p" ||
        { echo "$0: port $p is in use; hint: set KVAUDIT_SLURM_PORT to a free pair (PORT and PORT+1)" >&2; exit 2; }
    done
    mkdir -p "$dir"/{state,spool,log,munge}
    dir=$(cd "$dir" && pwd)
    host=$(hostname -s)
    cpus=$(nproc)
    # A requeued job waits cred_expire + 1 s before it starts again (the killed run's credential
    # must have expired: slurmd refuses a job whose credential it revoked), 120 s by default; a
    # local node launches in milliseconds, so 10 s is ample and keeps the requeue tests short.
    cred_expire=10
    # The scheduler passes every second (defaults: 60 s and 30 s), so a job whose begin time has
    # come starts without waiting for the next event.
    cat >"$dir/slurm.conf" <<CONF
ClusterName=kvaudit-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=$cred_expire
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    # unset: run inside an outer Slurm job (SLURM_JOB_ID set), job_pids would match this script
    trap 'unset SLURM_CONF; stop_cluster' ERR
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    chmod 400 "$dir/munge/munge.key"
    munged --force -S "$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/munged.pid" \
      --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
    export SLURM_CONF=$dir/slurm.conf
    slurmctld -i
    slurmd
    for _ in $(seq 1 300); do
      if sinfo -h -o %T 2>/dev/null | grep -qx idle; then echo "slurm-local: up, SLURM_CONF=$dir/slurm.conf"; exit 0; fi
      sleep 0.1
    done
    echo "$0: the node did not come up in 30 s; see $dir/log/" >&2
    unset SLURM_CONF
    stop_cluster
    exit 1
    ;;
  stop)
    dir=$(cd "$dir" 2>/dev/null && pwd) || exit 0  # nothing was started there
    stop_cluster
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac

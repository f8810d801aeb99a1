#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for the scale-out tests (issue 14,
# docs/scale-out.md): Debian's slurm-wlm and munge, every file (config, munge key and socket,
# state, spool, logs, pid files) under DIR, nothing installed system-wide, ports on localhost.
#   scripts/slurm-local.sh start DIR   generate DIR/slurm.conf, start munged, slurmctld, slurmd;
#                                      wait (at most 30 s) until the node is idle
#   scripts/slurm-local.sh stop DIR    stop all three (by their pid files), wait until gone
# Then: SLURM_CONF=DIR/slurm.conf sbatch ... . Ports: KVAUDIT_SLURM_PORT (slurmctld, default
# 16817) and the next one (slurmd). Runs as root (the CI machine's user): SlurmUser=root, and
# proctrack/linuxproc + task/none, so no cgroup setup is needed.
set -euo pipefail
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
port=${KVAUDIT_SLURM_PORT:-16817}

stop_pid() {  # stop_pid FILE: TERM, then wait for the process to go (bounded: 10 s), then KILL
  local f=$1
  [ -f "$f" ] || return 0
  local pid
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

case "$cmd" in
  start)
    command -v slurmctld >/dev/null || { echo "$0: slurmctld not found; hint: bash scripts/setup.sh installs slurm-wlm and munge" >&2; exit 2; }
    mkdir -p "$dir"/{state,spool,log,munge}
    dir=$(cd "$dir" && pwd)
    host=$(hostname -s)
    cpus=$(nproc)
    cat >"$dir/slurm.conf" <<CONF
ClusterName=kvaudit-local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
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
ReturnToService=2
MpiDefault=none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
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
    exit 1
    ;;
  stop)
    stop_pid "$dir/slurmd.pid"
    stop_pid "$dir/slurmctld.pid"
    stop_pid "$dir/munged.pid"
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac

#!/bin/bash
# Submits an audit split over N Slurm array tasks and its merge (docs/scale-out.md):
#   KVAUDIT=... MODEL=... DATA=... AUDIT_DIR=... examples/slurm/submit.sh N [sbatch flags...]
# Prints the array's and the merge's job ids ("ARRAY MERGE"). The sbatch flags go to both jobs
# (partition, account, --cpus-per-task). Logs: $AUDIT_DIR/logs/shard-I.log, merge.log.
# $AUDIT_DIR must be on a file system every node sees.
# If a task fails (exit status not 0), Slurm 22.05 counts the afterok dependency as never
# satisfied even after the task is requeued and succeeds, and cancels the merge
# (--kill-on-invalid-dep): requeue the task (`scontrol requeue ARRAY_I`; it resumes), then submit
# merge.sbatch alone. A task requeued while running (preemption) keeps the dependency. Slurm holds
# a requeued task back for its credential lifetime (AuthInfo cred_expire, 120 s by default); do
# not force it earlier (`scontrol update ... starttime=now`): slurmd may still refuse it, as a job
# whose credential it revoked, and the task fails.
set -euo pipefail
n=${1:?usage: submit.sh N [sbatch flags...]}
shift
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: N must be a positive count, not '$n'" >&2; exit 2; }
: "${KVAUDIT:?path of the kvaudit binary}" "${MODEL:?model}" "${DATA:?eval text}" "${AUDIT_DIR:?output root}"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$AUDIT_DIR/logs"
# The jobs read these from their environment, wherever they run: absolute paths.
AUDIT_DIR=$(cd "$AUDIT_DIR" && pwd)
export AUDIT_DIR
array=$(sbatch --parsable --array=0-$((n - 1)) --output="$AUDIT_DIR/logs/shard-%a.log" --export=ALL "$@" \
  "$here/shard.sbatch")
array=${array%%;*}  # --parsable prints "ID;CLUSTER" on a federated cluster
merge=$(sbatch --parsable --dependency=afterok:"$array" --kill-on-invalid-dep=yes \
  --output="$AUDIT_DIR/logs/merge.log" --export=ALL "$@" "$here/merge.sbatch")
echo "$array ${merge%%;*}"

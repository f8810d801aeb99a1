#!/bin/bash
# Submits one round of an audit split over N Slurm array tasks, and its merge (docs/scale-out.md
# "Slurm"):
#   KVAUDIT=... MODEL=... DATA=... AUDIT_DIR=... AUDIT_FLAGS='--budget 1800 ...' \
#     examples/slurm/submit.sh N [sbatch flags...]
# Prints the array's and the merge's job ids ("ARRAY MERGE"). The merge job submits the next round
# the same way when the audit has one (a --budget audit has up to five), and finishes the audit
# after the last: wait for $AUDIT_DIR/audit/results.json, or until none of the jobs is left.
# The sbatch flags go to every job (partition, account, --cpus-per-task). Logs:
# $AUDIT_DIR/logs/shard-I.log (every round, appended), merge-R.log and merge-R.json.
# $AUDIT_DIR must be on a file system every node sees.
# If a task fails (exit status not 0), Slurm 22.05 counts the afterok dependency as never
# satisfied even after the task is requeued and succeeds, and cancels the merge
# (--kill-on-invalid-dep): requeue the task (`scontrol requeue ARRAY_I`; it resumes), then submit
# merge.sbatch alone with the same environment and ROUND (the chain goes on from there). A task
# requeued while running (preemption) keeps the dependency. Slurm holds a requeued task back for
# its credential lifetime (AuthInfo cred_expire, 120 s by default); do not force it earlier
# (`scontrol update ... starttime=now`): slurmd may still refuse it, as a job whose credential it
# revoked, and the task fails.
set -euo pipefail
n=${1:?usage: submit.sh N [sbatch flags...]}
shift
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: N must be a positive count, not '$n'" >&2; exit 2; }
: "${KVAUDIT:?path of the kvaudit binary}" "${MODEL:?model}" "${DATA:?eval text}" "${AUDIT_DIR:?output root}"
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$AUDIT_DIR/logs"
# The jobs read these from their environment, wherever they run: absolute paths.
AUDIT_DIR=$(cd "$AUDIT_DIR" && pwd)
ROUND=${ROUND:-1}
export AUDIT_DIR ROUND SHARDS=$n KVAUDIT_SLURM_EXAMPLES=$here KVAUDIT_SBATCH_FLAGS="$*"
array=$(sbatch --parsable --array=0-$((n - 1)) --job-name="kvaudit-shard-r$ROUND" \
  --output="$AUDIT_DIR/logs/shard-%a.log" --export=ALL "$@" "$here/shard.sbatch")
array=${array%%;*}  # --parsable prints "ID;CLUSTER" on a federated cluster
merge=$(sbatch --parsable --dependency=afterok:"$array" --kill-on-invalid-dep=yes --job-name="kvaudit-merge-r$ROUND" \
  --output="$AUDIT_DIR/logs/merge-$ROUND.log" --export=ALL "$@" "$here/merge.sbatch")
echo "$array ${merge%%;*}"

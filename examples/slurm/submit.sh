#!/bin/bash
# Submits an audit split over N Slurm array tasks and its merge (docs/scale-out.md):
#   KVAUDIT=... MODEL=... DATA=... AUDIT_DIR=... examples/slurm/submit.sh N [sbatch flags...]
# Prints the array's and the merge's job ids. $AUDIT_DIR must be on a file system every node sees.
set -euo pipefail
n=${1:?usage: submit.sh N [sbatch flags...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$AUDIT_DIR/logs"
array=$(sbatch --parsable --array=0-$((n - 1)) --output="$AUDIT_DIR/logs/shard-%a.log" --export=ALL "$@" \
  "$here/shard.sbatch")
merge=$(sbatch --parsable --dependency=afterok:"$array" --kill-on-invalid-dep=yes \
  --output="$AUDIT_DIR/logs/merge.log" --export=ALL "$@" "$here/merge.sbatch")
echo "$array $merge"

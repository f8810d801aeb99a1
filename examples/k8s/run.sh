#!/bin/bash
# Runs the audit on a cluster, round by round: the Indexed Job (audit-shards.yaml) and, once it has
# completed, the merge Job (audit-merge.yaml), each under the round's name; the merge's last log
# line says whether another round follows (`kvaudit: next round`, a --budget audit) or the audit
# is finished (`kvaudit: finished`).
#   examples/k8s/run.sh [kubectl flags, e.g. -n audits]
# Then read /audit/audit (results.json, gate.xml, report.html) from the volume. While the shards
# run, `kvaudit merge --partial /audit/shard-* --out /audit/partial` (from any pod mounting the
# volume) shows what has finished. Timeouts: 24 h per round of shards, 12 h per merge; at most
# MAX_ROUNDS (default 8) rounds.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for ((round = 1; round <= ${MAX_ROUNDS:-8}; round++)); do
  sed "s/name: kvaudit-shards$/name: kvaudit-shards-r$round/" "$here/audit-shards.yaml" | kubectl "$@" apply -f -
  kubectl "$@" wait --for=condition=complete --timeout=24h "job/kvaudit-shards-r$round"
  sed "s/name: kvaudit-merge$/name: kvaudit-merge-r$round/" "$here/audit-merge.yaml" | kubectl "$@" apply -f -
  kubectl "$@" wait --for=condition=complete --timeout=12h "job/kvaudit-merge-r$round"
  last=$(kubectl "$@" logs "job/kvaudit-merge-r$round" | tail -n 1)
  [ "$last" = "kvaudit: next round" ] || { echo "$last"; exit 0; }
done
echo "run.sh: still more rounds after ${MAX_ROUNDS:-8}" >&2
exit 1

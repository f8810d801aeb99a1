#!/bin/bash
# Runs the audit on a cluster: the Indexed Job, a wait for it, the merge Job, a wait for that.
#   examples/k8s/run.sh [kubectl flags, e.g. -n audits]
# Then read /audit/audit (results.json, gate.xml, report.html) from the volume. While the shards
# run, `kvaudit merge --partial /audit/shard-* --out /audit/partial` (from any pod mounting the
# volume) shows what has finished. Timeouts: 24 h for the shards, 12 h for the merge.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kubectl "$@" apply -f "$here/audit-shards.yaml"
kubectl "$@" wait --for=condition=complete --timeout=24h job/kvaudit-shards
kubectl "$@" apply -f "$here/audit-merge.yaml"
kubectl "$@" wait --for=condition=complete --timeout=12h job/kvaudit-merge

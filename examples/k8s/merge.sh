#!/bin/bash
# The step after every shard of a round has completed (audit-merge.yaml; run.sh waits for the
# Indexed Job first): the round merged into $AUDIT_DIR/audit. When the audit has another round (a
# --budget audit: the recommendation's), it prints `kvaudit: next round` and run.sh starts the
# round's Jobs again; after the last it finishes the audit there (verdicts, the report), resuming
# every recorded unit, and prints `kvaudit: finished`. Exit 1 of the audit is a verdict (a
# configuration fails the policy), not a failed step: this script exits 0 then, and the verdict is
# in $AUDIT_DIR/audit/gate.xml.
set -euo pipefail
: "${MODEL:?model directory or .gguf}" "${DATA:?eval text}" "${AUDIT_DIR:?shared output root}" "${SHARDS:?shard count}"
KVAUDIT=${KVAUDIT:-kvaudit}
dirs=()
for ((i = 0; i < SHARDS; i++)); do dirs+=("$AUDIT_DIR/shard-$i"); done
mkdir -p "$AUDIT_DIR/logs"
summary="$AUDIT_DIR/logs/merge-$(date -u +%Y%m%dT%H%M%S)-$$.json"
"$KVAUDIT" merge "${dirs[@]}" --out "$AUDIT_DIR/audit" --json >"$summary"
# merge --json prints the summary with two-space indentation: `"more_rounds": true` on its own.
if grep -q '"more_rounds": true' "$summary"; then
  echo "kvaudit: next round"
  exit 0
fi
# shellcheck disable=SC2086  # AUDIT_FLAGS is a flag list
"$KVAUDIT" audit --model "$MODEL" --data "$DATA" ${AUDIT_FLAGS:-} --threads "${THREADS:-$(nproc)}" \
  --out "$AUDIT_DIR/audit" || [ $? -eq 1 ]
echo "kvaudit: finished"

#!/bin/bash
# The step after every shard of audit-shards.yaml has completed (audit-merge.yaml; run.sh waits for
# the Indexed Job first): the shards' stages merged into $AUDIT_DIR/audit, then the same audit
# command without --shard finishes it there (verdicts, --budget's recommendation, the report),
# resuming every recorded unit. Exit 1 is a verdict (a configuration fails the policy), not a
# failed step: this script exits 0 then, and the verdict is in $AUDIT_DIR/audit/gate.xml.
set -euo pipefail
: "${MODEL:?model directory or .gguf}" "${DATA:?eval text}" "${AUDIT_DIR:?shared output root}" "${SHARDS:?shard count}"
KVAUDIT=${KVAUDIT:-kvaudit}
dirs=()
for ((i = 0; i < SHARDS; i++)); do dirs+=("$AUDIT_DIR/shard-$i"); done
"$KVAUDIT" merge "${dirs[@]}" --out "$AUDIT_DIR/audit"
# shellcheck disable=SC2086
"$KVAUDIT" audit --model "$MODEL" --data "$DATA" ${AUDIT_FLAGS:-} --threads "${THREADS:-$(nproc)}" \
  --out "$AUDIT_DIR/audit" || [ $? -eq 1 ]

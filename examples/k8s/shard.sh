#!/bin/bash
# One shard of one round of an audit in a Kubernetes Indexed Job (audit-shards.yaml;
# docs/scale-out.md "Kubernetes"). The pod gets JOB_COMPLETION_INDEX from Kubernetes; SHARDS must
# equal the Job's `completions`. Writes $AUDIT_DIR/shard-$JOB_COMPLETION_INDEX on the shared volume;
# what the round computes follows from what $AUDIT_DIR/audit holds (round 1: eval and probes; with
# --budget, then the recommendation's rounds). A restarted container (a killed or evicted pod:
# restartPolicy OnFailure, or a new pod for the index) runs the same command and resumes from the
# shard's journals; nothing recorded is computed again.
#   KVAUDIT  the binary (default: kvaudit on PATH)     MODEL, DATA  the model and the eval text
#   AUDIT_DIR  the shared output root                  AUDIT_FLAGS  the audit's flags (same for every shard and the merge)
#   THREADS  default: the CPUs the container may use (nproc honours the cgroup's cpuset)
set -euo pipefail
: "${JOB_COMPLETION_INDEX:?set by Kubernetes for an Indexed Job}" "${SHARDS:?the completions of the Job}"
: "${MODEL:?model directory or .gguf}" "${DATA:?eval text}" "${AUDIT_DIR:?shared output root}"
KVAUDIT=${KVAUDIT:-kvaudit}
# shellcheck disable=SC2086  # AUDIT_FLAGS is a flag list
exec "$KVAUDIT" audit --model "$MODEL" --data "$DATA" ${AUDIT_FLAGS:-} --threads "${THREADS:-$(nproc)}" \
  --shard "$JOB_COMPLETION_INDEX/$SHARDS" --merged "$AUDIT_DIR/audit" --out "$AUDIT_DIR/shard-$JOB_COMPLETION_INDEX"

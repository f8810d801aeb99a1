#!/usr/bin/env bash
# Our side of BENCHMARKS.md's opening table: the same files and tests as llama.cpp's figures in
# ../shared/reference/peer-figures.md (llama-bench pp4096 / tg128 at depth 0 and 4000, 2 threads;
# the KLD workflow base + q8_0 + q4_0 on data/public-kld.txt), run on this machine.
#   bench/peer_table.sh [BUILD_DIR] [ROUNDS]    (default build/release, 3 rounds)
# Prints each round's raw output; BENCHMARKS.md quotes the medians over the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
rounds="${2:-3}"
fixtures="${KVAUDIT_FIXTURES:-../shared}"
model=models/kvq-code-16m
out="$(mktemp -d "${TMPDIR:-/tmp}/kvaudit-peer.XXXXXX")"
trap 'rm -rf "$out"' EXIT
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
  echo "## round $r"
  for m in "$model" "$fixtures/models/gguf/kvq-code-16m-q8_0.gguf" "$fixtures/models/gguf/kvq-code-16m-q4_k_m.gguf"; do
    "$build/bench/forward_bench" "$m" 2 4096 0 3  # prefill 4096 and decode 128 at depth 0
  done
  "$build/bench/decode_kv_bench" "$model" 4000 5 32 kv=f16 kv=q8_0 kv=q4_0 \
    "k=q8_0,v=q8_0,engine=llama.cpp" "k=q4_0,v=q4_0,engine=llama.cpp" 2>/dev/null
done
# The KLD workflow once (minutes): wall time and peak RSS of one eval with both configurations.
/usr/bin/time -f "eval wall %e s, peak RSS %M KB" "$build/kvaudit" eval --model "$model" \
  --data "$fixtures/data/public-kld.txt" --kv "k=q8_0,v=q8_0,engine=llama.cpp,rot=0" \
  --kv "k=q4_0,v=q4_0,engine=llama.cpp,rot=0" --ctx 4096 --score-from 2048 --threads 2 \
  --out "$out/eval" --restart 2>&1 | tail -n 12
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# BENCHMARKS.md "kvaudit serve": requests/s and p50/p99 latency of `kvaudit serve` on the bundled
# model at 1, 4 and 16 concurrent clients, for short (64-token) and 4k (4000-token) prompts, 16
# generated tokens, greedy; then the same short/4k load with --shadow-rate 1 when the build has it.
#   bench/serve_load.sh [BUILD_DIR] [EXTRA SERVE FLAGS...]
# One server per row set (loopback, --port 0), 2 threads in all, --parallel 2 (one thread each).
set -euo pipefail
build=${1:-build/release}
shift || true
bin=$build/kvaudit
load=$build/bench/serve_load_bench
log=$(mktemp)
"$bin" serve --model models/kvq-code-16m --kv k=q4_0,v=q4_0 --port 0 --threads 2 --parallel 2 --queue 64 "$@" \
  >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 600); do
  port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "${port:-}" ] || { cat "$log"; exit 1; }
# Requests per client: enough for a p99 from >= 32 samples per row, bounded in time.
for prompt in 64 4000; do
  for clients in 1 4 16; do
    if [ "$prompt" = 64 ]; then per=$(( 64 / clients > 2 ? 64 / clients : 2 )); else per=$(( 32 / clients > 2 ? 32 / clients : 2 )); fi
    "$load" "$port" "$clients" "$per" "$prompt" 16
  done
done

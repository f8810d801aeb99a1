#!/usr/bin/env bash
# Decode speed of real-size GGUF files (kvaudit-synth-model's shapes, docs/synthetic-models.md)
# beside llama.cpp's on the same files, side by side: per file, ROUNDS alternating rounds of
# kvaudit's forward_bench (decode 128 tokens at depth 0, median of REPS) and llama-bench
# (-p 0 -n 128 at depth 0, REPS repetitions, flash attention on), 2 threads each.
#   bench/realsize_decode.sh BUILD_DIR ROUNDS REPS FILE...
# llama.cpp comes from scripts/build_llamacpp.sh (built once, cached). At depth 0 the cache holds
# at most 128 positions, so the cache types (kvaudit f32, llama-bench f16) do not weigh. Files are
# taken one at a time, all rounds of a file in a row, so that each stays in the page cache.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 4 ]] || { echo "usage: bench/realsize_decode.sh BUILD_DIR ROUNDS REPS FILE..." >&2; exit 2; }
build="$1" rounds="$2" reps="$3"
shift 3
llama_bin="$(scripts/build_llamacpp.sh)"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), kvaudit $(git rev-parse --short HEAD), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for file in "$@"; do
  echo "## $file ($(stat -c %s "$file") bytes)"
  for r in $(seq 1 "$rounds"); do
    echo "### round $r, $(date -u '+%H:%M:%S'), load $(cut -d' ' -f1 /proc/loadavg)"
    "$build/bench/forward_bench" "$file" 2 512 0 "$reps" tg0
    "$llama_bin/llama-bench" -m "$file" -t 2 -p 0 -n 128 -fa 1 -r "$reps" -o md
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

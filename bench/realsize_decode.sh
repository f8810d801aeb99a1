#!/usr/bin/env bash
# Decode speed of real-size GGUF files (kvaudit-synth-model's shapes, docs/synthetic-models.md)
# beside llama.cpp's on the same files, side by side, and as a fraction of this machine's DRAM
# bandwidth: first bench/machine_limits_bench (read and triad GB/s, 2 threads), then per file ROUNDS
# alternating rounds of kvaudit's forward_bench under each weight arithmetic (stored: the native
# engine's exact products; llama.cpp: engine=llama.cpp) — decode 128 tokens at depth 0, median of
# REPS, with the weight bytes a step reads and their GB/s — and llama-bench (-p 0 -n 128 at depth 0,
# REPS repetitions, flash attention on), 2 threads each; llama-bench's GB/s is printed from the same
# bytes per token (both engines read the same weights per step: every matrix, one embedding row).
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
"$build/bench/machine_limits_bench" 2 256 5
for file in "$@"; do
  echo "## $file ($(stat -c %s "$file") bytes)"
  for r in $(seq 1 "$rounds"); do
    echo "### round $r, $(date -u '+%H:%M:%S'), load $(cut -d' ' -f1 /proc/loadavg)"
    mb=""
    for arithmetic in stored llama.cpp; do
      out="$("$build/bench/forward_bench" "$file" 2 512 0 "$reps" tg0 "$arithmetic")"
      grep -v '^model' <<<"$out" | sed "s/^/kvaudit $arithmetic: /"
      mb="$(sed -n 's/^decode reads \([0-9.]*\) MB.*/\1/p' <<<"$out")"
    done
    row="$("$llama_bin/llama-bench" -m "$file" -t 2 -p 0 -n 128 -fa 1 -r "$reps" -o md | grep -E '^\| .*tg[0-9]')"
    echo "$row"
    awk -F'|' -v mb="$mb" 'mb != "" { split($(NF-1), t, " ");
      printf "llama.cpp: %.2f GB/s at the mean (%s MB of weights per token)\n", mb * t[1] / 1e3, mb }' <<<"$row"
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

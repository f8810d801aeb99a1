#!/usr/bin/env bash
# kvaudit beside llama.cpp on the same GGUF files, side by side in one run: per file, ROUNDS
# alternating rounds of kvaudit's forward_bench under each weight arithmetic (stored: the native
# engine's exact products; llama.cpp: engine=llama.cpp, llama.cpp's own arithmetic,
# docs/architecture.md "llama.cpp's arithmetic") and llama-bench, 2 threads each: prefill of
# PROMPT tokens and decode of 128 at depth 0, each a median of REPS (llama-bench: mean ± sd of REPS).
#   bench/llamacpp_side_by_side.sh BUILD_DIR ROUNDS REPS PROMPT FILE...
# A FILE written OURS:THEIRS runs kvaudit on OURS and llama-bench on THEIRS (the bundled model:
# models/kvq-code-16m:../shared/models/gguf/kvq-code-16m-f16.gguf, its bf16 safetensors beside
# llama.cpp's conversion of them); a directory OURS runs the native arithmetic only
# (engine=llama.cpp's weight arithmetic covers GGUF block types and f32/f16, not bf16).
# llama.cpp comes from scripts/build_llamacpp.sh (built once, cached). kvaudit's cache is f32 and
# llama-bench's f16 with flash attention on: at depth 0 and PROMPT ≤ 512 the cache weighs little.
# BENCHMARKS.md quotes each cell as the median over the rounds of the per-round medians.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 5 ]] || { echo "usage: bench/llamacpp_side_by_side.sh BUILD_DIR ROUNDS REPS PROMPT FILE..." >&2; exit 2; }
build="$1" rounds="$2" reps="$3" prompt="$4"
shift 4
llama_bin="$(scripts/build_llamacpp.sh)"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), kvaudit $(git rev-parse --short HEAD), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for arg in "$@"; do
  ours="${arg%%:*}" theirs="${arg#*:}"
  arithmetics="stored llama.cpp"
  [[ -d "$ours" ]] && arithmetics="stored"
  echo "## kvaudit: $ours, llama.cpp: $theirs ($(stat -c %s "$theirs") bytes)"
  for r in $(seq 1 "$rounds"); do
    echo "### round $r, $(date -u '+%H:%M:%S'), load $(cut -d' ' -f1 /proc/loadavg)"
    for arithmetic in $arithmetics; do
      "$build/bench/forward_bench" "$ours" 2 "$prompt" 0 "$reps" all "$arithmetic" | grep -v '^model' |
        sed "s/^/kvaudit $arithmetic: /"
    done
    "$llama_bin/llama-bench" -m "$theirs" -t 2 -p "$prompt" -n 128 -fa 1 -r "$reps" -o md | grep -E '^\| .*(pp|tg)[0-9]'
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

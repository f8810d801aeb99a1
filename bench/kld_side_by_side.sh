#!/usr/bin/env bash
# The KLD workflow (base + q8_0 + q4_0 on public-kld.txt, BENCHMARKS.md) side by side on one GGUF
# file: llama.cpp's own (llama-perplexity: a base run writing its logits file, then one
# --kl-divergence run per cache type) beside one `kvaudit eval` of the same file, text, windows and
# scored positions, with both configurations in llama.cpp's arithmetic (engine=llama.cpp: its
# weight products and its attention; rotation off on both sides: LLAMA_ATTN_ROT_DISABLE=1, rot=0),
# against a baseline in it too (f32 cache, as llama.cpp's base run).
# 14 windows of 4096 tokens, positions 2048–4094 scored (28,658 positions), 2 threads, flash
# attention on; each step under /usr/bin/time (wall, peak RSS).
#   bench/kld_side_by_side.sh BUILD_DIR MODEL.gguf
# Prints llama.cpp's "Mean KLD", "Same top p" and PPL lines and kvaudit's summary; BENCHMARKS.md
# quotes them. llama.cpp comes from scripts/build_llamacpp.sh (built once, cached).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 2 ]] || { echo "usage: bench/kld_side_by_side.sh BUILD_DIR MODEL.gguf" >&2; exit 2; }
build="$1" model="$2"
fixtures="${KVAUDIT_FIXTURES:-../shared}"
text="$fixtures/data/public-kld.txt"
llama_bin="$(scripts/build_llamacpp.sh)"
out="$(mktemp -d "${TMPDIR:-/tmp}/kvaudit-kld.XXXXXX")"
trap 'rm -rf "$out"' EXIT
timed() { /usr/bin/time -f "  wall %e s, peak RSS %M KB" "$@"; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), kvaudit $(git rev-parse --short HEAD), $model, load: $(cut -d' ' -f1-3 /proc/loadavg)"
perplexity=("$llama_bin/llama-perplexity" -m "$model" -f "$text" -c 4096 -t 2 -fa on)
echo "## llama.cpp base run"
timed "${perplexity[@]}" --kl-divergence-base "$out/base.kld" 2>&1 | grep -E "Final estimate|wall" || true
echo "  logits file: $(stat -c %s "$out/base.kld") bytes"
for t in q8_0 q4_0; do
  echo "## llama.cpp -ctk $t -ctv $t (rotation off)"
  LLAMA_ATTN_ROT_DISABLE=1 timed "${perplexity[@]}" --kl-divergence --kl-divergence-base "$out/base.kld" \
    -ctk "$t" -ctv "$t" 2>&1 | grep -E "^Mean PPL|^Mean +KLD|^99\.0% +KLD|^Same top p|wall" || true
done
echo "## kvaudit eval, both configurations in one run (engine=llama.cpp, rot=0; its defaults otherwise)"
timed "$build/kvaudit" eval --model "$model" --data "$text" --ctx 4096 --score-from 2048 --threads 2 \
  --baseline "k=f32,v=f32,engine=llama.cpp" \
  --kv "k=q8_0,v=q8_0,engine=llama.cpp,rot=0" --kv "k=q4_0,v=q4_0,engine=llama.cpp,rot=0" \
  --out "$out/eval" --restart 2>&1 | grep -vE "^\s*$|\[[#. ]+\]" | tail -n 25
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# Regenerates tests/data/llamacpp_kv_buffers.tsv: the KV cache sizes llama.cpp itself prints for
# the attention shapes of gpt-oss-20b, Gemma-3-12B and Qwen3-30B-A3B, with and without --swa-full,
# f16 / q8_0 / q4_0, at a few contexts, and for the tiny goldens' own GGUFs (f16).
# tests/unit/decide_kv_memory_llamacpp_test.cc and tests/golden/decide_kv_memory_golden_test.cc check
# kvaudit's llama.cpp memory model (src/decide/targets/kv_cells.h, kv_memory.h) against every row.
#
#   scripts/llamacpp_kv_buffers.sh [OUT.tsv]     # default: tests/data/llamacpp_kv_buffers.tsv
#   KVAUDIT_LLAMACPP_BIN=DIR scripts/llamacpp_kv_buffers.sh   # llama-perplexity from DIR
#
# Needs llama.cpp's tools (scripts/build_llamacpp.sh builds them, 10-20 minutes on 2 cores) and the
# goldens in $KVAUDIT_FIXTURES/golden/llamacpp as templates (scripts/synth_attention_gguf.py keeps
# their tiny vocab and FFN and sets the real attention shape). llama-perplexity creates the context,
# prints the caches, then stops: an empty text is too short to score (it exits 1; expected).
# Peak memory: the largest cache below, about 6.5 GiB (Gemma-3-12B q8_0 --swa-full at 32768).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/tests/data/llamacpp_kv_buffers.tsv}"
fixtures="${KVAUDIT_FIXTURES:-$root/../shared}"
# KVAUDIT_LLAMACPP_BIN: a bin directory holding llama-perplexity of the commit below (else built).
bin="${KVAUDIT_LLAMACPP_BIN:-$(nice -n 10 "$root/scripts/build_llamacpp.sh")}"
commit="$(git -C "$bin/../../src" rev-parse HEAD 2>/dev/null || basename "$(dirname "$(dirname "$bin")")")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# name, template, layers, query heads, KV heads, head_dim, window (0: none), context_length
models=(
  "gpt-oss-20b gpt-oss 24 64 8 64 128 131072"
  "gemma-3-12b gemma3 48 16 8 256 1024 131072"
  "qwen3-30b-a3b qwen3moe 48 32 4 128 0 40960"
)
for m in "${models[@]}"; do
  read -r name template layers heads kv dim window context <<<"$m"
  window_flag=()
  [[ "$window" != 0 ]] && window_flag=(--window "$window")
  python3 "$root/scripts/synth_attention_gguf.py" "$fixtures/golden/llamacpp/$template/model.gguf" "$work/$name.gguf" \
    --layers "$layers" --heads "$heads" --kv-heads "$kv" --head-dim "$dim" --context "$context" "${window_flag[@]}"
done

# The tiny goldens themselves (f16: head_dim 16), read by kvaudit's loader in the golden test.
for g in gemma2 gemma3 gpt-oss; do cp "$fixtures/golden/llamacpp/$g/model.gguf" "$work/golden-$g.gguf"; done

# One llama.cpp run: its cache lines as rows "model ctx type swa_full cache cells layers k_mib v_mib buffer_mib".
run() {
  local name="$1" ctx="$2" type="$3" swa_full="$4" flags=()
  [[ "$swa_full" == 1 ]] && flags=(--swa-full)
  "$bin/llama-perplexity" -m "$work/$name.gguf" -c "$ctx" -ctk "$type" -ctv "$type" -fa on "${flags[@]}" \
    --no-warmup -t 2 -lv 4 -f /dev/null >"$work/log" 2>&1 || true
  awk -v name="$name" -v ctx="$ctx" -v type="$type" -v full="$swa_full" '
    /creating non-SWA KV cache/ { cache = "base" }
    /creating +SWA KV cache/     { cache = "swa" }
    /KV buffer size =/           { buffer = $(NF - 1) }
    /llama_kv_cache: size =/ {
      match($0, /\( *[0-9]+ cells/); cells = substr($0, RSTART + 1, RLENGTH - 7) + 0
      match($0, /cells, +[0-9]+ layers/); layers = substr($0, RSTART + 6, RLENGTH - 13) + 0
      match($0, /K \([a-z0-9_]+\): +[0-9.]+ MiB/); split(substr($0, RSTART, RLENGTH), k, " +|: +")
      match($0, /V \([a-z0-9_]+\): +[0-9.]+ MiB/); split(substr($0, RSTART, RLENGTH), v, " +|: +")
      printf "%s\t%d\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n", name, ctx, type, full, cache == "" ? "all" : cache,
             cells, layers, k[3], v[3], buffer
    }' "$work/log" >"$work/rows"
  if [[ ! -s "$work/rows" ]]; then
    echo "llamacpp_kv_buffers.sh: llama.cpp printed no KV cache for $name -c $ctx $type; its log:" >&2
    cat "$work/log" >&2
    exit 1
  fi
  cat "$work/rows"
}

{
  echo "# KV cache sizes printed by llama.cpp $commit (built by scripts/build_llamacpp.sh), captured $(date -u +%F)"
  echo "# by scripts/llamacpp_kv_buffers.sh. Each row is one 'llama_kv_cache: size = ...' line of"
  echo "#   llama-perplexity -m MODEL.gguf -c CTX -ctk TYPE -ctv TYPE -fa on [--swa-full] --no-warmup -t 2 -lv 4 -f /dev/null"
  echo "# (one sequence, n_ubatch 512); MODEL.gguf from scripts/synth_attention_gguf.py with the attention of:"
  for m in "${models[@]}"; do echo "#   $m  (name template layers heads kv_heads head_dim window context)"; done
  echo "#   golden-<g>: \$KVAUDIT_FIXTURES/golden/llamacpp/<g>/model.gguf itself"
  echo "# cache: base = llama.cpp's non-SWA cache, swa = its SWA cache, all = the one cache of a model without"
  echo "# a window. k_mib, v_mib: llama.cpp's %7.2f of (float)bytes / 2^20; buffer_mib: its KV buffer line."
  printf "model\tctx\ttype\tswa_full\tcache\tcells\tlayers\tk_mib\tv_mib\tbuffer_mib\n"
  for m in "${models[@]}"; do
    read -r name _ _ _ _ _ window _ <<<"$m"
    for ctx in 4096 5000 32768; do
      for type in f16 q8_0 q4_0; do
        run "$name" "$ctx" "$type" 0
        # --swa-full at 32768 in f16 would hold 12 GiB for Gemma-3-12B: left out.
        if [[ "$window" != 0 && ! ("$name" == gemma-3-12b && "$ctx" == 32768 && "$type" == f16) ]]; then
          run "$name" "$ctx" "$type" 1
        fi
      done
    done
  done
  for g in gemma2 gemma3 gpt-oss; do
    run "golden-$g" 4096 f16 0
    run "golden-$g" 4096 f16 1
  done
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out ($(grep -vc '^#' "$out") lines)"

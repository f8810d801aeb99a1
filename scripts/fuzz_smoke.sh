#!/usr/bin/env bash
# A short run of every libFuzzer target over its committed seeds: CI's check that the targets build,
# start and survive 20,000 mutated inputs each (real campaigns: docs/fuzzing.md). New inputs go
# to a scratch directory, never into the committed corpora.
#   scripts/fuzz_smoke.sh [BUILD_DIR]      (default build/fuzz; FUZZ_SMOKE_RUNS, default 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/fuzz}/tests/fuzz"
runs="${FUZZ_SMOKE_RUNS:-20000}"
work="$(mktemp -d "${TMPDIR:-/tmp}/kvaudit-fuzz-smoke.XXXXXX")"
trap 'rm -rf "$work"' EXIT

corpus_state() { find tests/fuzz/corpus tests/data -type f -print0 | sort -z | xargs -0 sha1sum; }
before="$(corpus_state)"

# smoke TARGET [libFuzzer flags] -- [seed directories]. libFuzzer writes new inputs into the FIRST
# corpus directory, so the scratch one goes first and the committed ones are only read.
smoke() {
  local name=$1 flags=() seeds=()
  shift
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  seeds=("$@")
  mkdir -p "$work/$name"
  local t0=$SECONDS
  if ! "$bin/$name" -runs="$runs" -max_total_time=120 -print_final_stats=1 "${flags[@]}" "$work/$name" \
      "${seeds[@]}" >"$work/$name.log" 2>&1; then
    tail -n 40 "$work/$name.log" >&2
    echo "fuzz-smoke: $name FAILED (log above)" >&2
    return 1
  fi
  echo "fuzz-smoke: $name ok: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$work/$name.log" |
    grep -o '[0-9]*$') inputs in $((SECONDS - t0)) s"
}

smoke gguf_fuzz -max_len=65536 -dict=tests/fuzz/gguf.dict -- tests/fuzz/corpus/gguf tests/data/malformed
smoke safetensors_fuzz -max_len=65536 -dict=tests/fuzz/safetensors.dict -- tests/fuzz/corpus/safetensors \
  tests/data/malformed
smoke kv_spec_fuzz -dict=tests/fuzz/kv_spec.dict -- tests/fuzz/corpus/kv_spec
smoke probe_jsonl_fuzz -- tests/fuzz/corpus/probe_jsonl
smoke policy_fuzz -max_len=4096 -dict=tests/fuzz/policy.dict -- tests/fuzz/corpus/policy
smoke serve_request_fuzz -max_len=4096 -dict=tests/fuzz/serve_request.dict -- tests/fuzz/corpus/serve_request
smoke tokenizer_json_fuzz -max_len=4096 --  # no committed seeds (a real tokenizer.json is 0.5 MB)
# The committed corpora must come out as they went in.
if [ "$(corpus_state)" != "$before" ]; then
  echo "fuzz-smoke: the run changed tests/fuzz/corpus or tests/data (new inputs belong in the scratch dir)" >&2
  exit 1
fi

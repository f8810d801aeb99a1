#!/usr/bin/env bash
# Regenerates tests/data/phi3_longrope/: llama.cpp's own logits (and greedy tokens) for the tiny phi3
# golden turned into a Phi-3 LongRoPE model (per-frequency rope_factors_long / rope_factors_short,
# original context 256, attention factor sqrt(1.5); scripts/longrope_gguf.py), at n_ctx 256 (llama.cpp
# picks the short factors) and 512 (the long ones). kvaudit's LongRoPE test rebuilds the same GGUF
# and checks its forward pass against these files; tests/data/phi3_longrope/README.md has the spec.
#
#   scripts/llamacpp_longrope_golden.sh [OUT_DIR]     # default: tests/data/phi3_longrope
#   KVAUDIT_LLAMACPP_BIN=DIR scripts/llamacpp_longrope_golden.sh   # DIR/../../ holds src/ and build/
#
# Needs llama.cpp's static libraries and headers (scripts/build_llamacpp.sh builds them with the
# tools, 10-20 minutes on 2 cores; cached), a C++17 compiler with OpenMP (the build's ggml-cpu uses
# it), python3, and the phi3 golden in $KVAUDIT_FIXTURES/golden/llamacpp as the template. First a
# sanity check: scripts/llamacpp_logits.cc must reproduce that golden's logits.f32 and greedy.txt
# (n_ctx 128) before anything is written. Seconds to run; nothing of llama.cpp enters the repository.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/tests/data/phi3_longrope}"
fixtures="${KVAUDIT_FIXTURES:-$root/../shared}"
golden="$fixtures/golden/llamacpp/phi3"
# KVAUDIT_LLAMACPP_BIN: the bin directory of a scripts/build_llamacpp.sh tree (else built).
bin="${KVAUDIT_LLAMACPP_BIN:-$(nice -n 10 "$root/scripts/build_llamacpp.sh")}"
llama="$(cd "$bin/../.." && pwd)"
commit="$(git -C "$llama/src" rev-parse HEAD 2>/dev/null || basename "$llama")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for f in "$golden/model.gguf" "$golden/ids.txt" "$golden/logits.f32" "$golden/greedy.txt"; do
  [[ -f "$f" ]] || { echo "llamacpp_longrope_golden.sh: $f is missing; hint: set KVAUDIT_FIXTURES" >&2; exit 2; }
done
libs=("$llama/build/src/libllama.a" "$llama/build/ggml/src/libggml.a" "$llama/build/ggml/src/libggml-cpu.a"
      "$llama/build/ggml/src/libggml-base.a")
for f in "${libs[@]}" "$llama/src/include/llama.h"; do
  [[ -f "$f" ]] || { echo "llamacpp_longrope_golden.sh: $f is missing; hint: run scripts/build_llamacpp.sh" >&2; exit 2; }
done

# The dumper, linked statically against this llama.cpp build (its ggml-cpu needs OpenMP).
"${CXX:-c++}" -std=c++17 -O2 -I"$llama/src/include" -I"$llama/src/ggml/include" \
  "$root/scripts/llamacpp_logits.cc" -o "$work/llamacpp_logits" "${libs[@]}" -fopenmp -lpthread -ldl -lm

# Max abs difference of two raw f32 files of the same size, and the max abs value of each.
compare() {
  python3 - "$@" <<'EOF'
import struct, sys
def load(p):
    b = open(p, "rb").read()
    return struct.unpack("<%df" % (len(b) // 4), b)
a, b = load(sys.argv[1]), load(sys.argv[2])
if len(a) != len(b):
    sys.exit("%s and %s differ in size" % (sys.argv[1], sys.argv[2]))
print("%.9g %.9g %.9g" % (max(abs(x - y) for x, y in zip(a, b)), max(map(abs, a)), max(map(abs, b))))
EOF
}

# Sanity: the dumper reproduces the phi3 golden it shares its settings with (expected: exactly).
"$work/llamacpp_logits" "$golden/model.gguf" "$golden/ids.txt" 128 "$work/sanity.f32" "$work/sanity.txt" \
  >"$work/sanity.log" 2>&1 || { cat "$work/sanity.log" >&2; exit 1; }
read -r sanity _ _ <<<"$(compare "$work/sanity.f32" "$golden/logits.f32")"
echo "sanity: phi3 golden logits reproduced, max abs diff $sanity"
if ! python3 -c "import sys; sys.exit(float(sys.argv[1]) > 1e-5)" "$sanity" ||
   ! cmp -s "$work/sanity.txt" "$golden/greedy.txt"; then
  echo "llamacpp_longrope_golden.sh: the dumper does not reproduce $golden (max abs diff $sanity, greedy:" >&2
  diff "$work/sanity.txt" "$golden/greedy.txt" >&2 || true
  echo "); wrong llama.cpp commit or settings? nothing written" >&2
  exit 1
fi

python3 "$root/scripts/longrope_gguf.py" "$golden/model.gguf" "$work/longrope.gguf"
for ctx in 256 512; do
  "$work/llamacpp_logits" "$work/longrope.gguf" "$golden/ids.txt" "$ctx" "$work/logits_ctx$ctx.f32" \
    "$work/greedy_ctx$ctx.txt" >"$work/ctx$ctx.log" 2>&1 || { cat "$work/ctx$ctx.log" >&2; exit 1; }
  # llama.cpp's own load log: the two keys read, the 23 tensors (21 + the two factor tensors), the
  # original context it compares n_ctx_seq with (llama-model.cpp get_rope_factors).
  echo "ctx $ctx, llama.cpp's log:"
  grep -E 'rope\.scaling\.|type +f32: |n_ctx_orig_yarn|n_ctx_seq +=|llamacpp_logits:' "$work/ctx$ctx.log" | sed 's/^/  /'
  if ! grep -q 'n_ctx_orig_yarn *= 256$' "$work/ctx$ctx.log" ||
     ! grep -q 'phi3.rope.scaling.attn_factor *f32 *= 1.224745$' "$work/ctx$ctx.log" ||
     ! grep -q 'type  *f32: *23 tensors' "$work/ctx$ctx.log" ||
     ! grep -q "n_ctx_seq  *= $ctx$" "$work/ctx$ctx.log"; then
    echo "llamacpp_longrope_golden.sh: llama.cpp did not load the LongRoPE GGUF as expected (ctx $ctx)" >&2
    exit 1
  fi
done

read -r d_runs max256 max512 <<<"$(compare "$work/logits_ctx256.f32" "$work/logits_ctx512.f32")"
read -r d_short _ _ <<<"$(compare "$work/logits_ctx256.f32" "$golden/logits.f32")"
read -r d_long _ _ <<<"$(compare "$work/logits_ctx512.f32" "$golden/logits.f32")"
echo "max abs diff ctx256 vs ctx512: $d_runs; vs the phi3 golden: ctx256 $d_short, ctx512 $d_long"
echo "max abs logit: ctx256 $max256, ctx512 $max512"
# The factors must matter: equal files would mean llama.cpp ignored them.
if ! python3 -c "import sys; sys.exit(min(map(float, sys.argv[1:])) < 0.1)" "$d_runs" "$d_short" "$d_long"; then
  echo "llamacpp_longrope_golden.sh: the LongRoPE runs barely differ; nothing written" >&2
  exit 1
fi

mkdir -p "$out"
for f in logits_ctx256.f32 greedy_ctx256.txt logits_ctx512.f32 greedy_ctx512.txt; do cp "$work/$f" "$out/$f"; done
echo "wrote $out (llama.cpp $commit):"
(cd "$out" && sha256sum logits_ctx256.f32 greedy_ctx256.txt logits_ctx512.f32 greedy_ctx512.txt | sed 's/^/  /')

#!/usr/bin/env bash
# Regenerates tests/data/phi3_longrope/: llama.cpp's own logits (and greedy tokens) for the tiny phi3
# golden turned into a Phi-3 LongRoPE model (per-frequency rope_factors_long / rope_factors_short,
# original context 256, attention factor sqrt(1.5); scripts/longrope_gguf.py), at n_ctx 256 (llama.cpp
# picks the short factors) and 512 (the long ones). Then the same for a partial-rotary variant
# (rot8_*: phi3.rope.dimension_count 8 of head_dim 16, 4 factors each, as Phi-4-mini rotates 96 of
# 128; longrope_gguf.py --rope-dims 8). kvaudit's LongRoPE test rebuilds the same GGUFs and checks
# its forward pass against these files; tests/data/phi3_longrope/README.md has the spec.
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

# $1: the file prefix ("" or "rot8_"), $2: n_rot expected in llama.cpp's log; runs $work/${1}longrope.gguf
# at n_ctx 256 and 512 into $work/${1}logits_ctx*.f32, ${1}greedy_ctx*.txt.
run_variant() {
  local p="$1" n_rot="$2" ctx
  for ctx in 256 512; do
    "$work/llamacpp_logits" "$work/${p}longrope.gguf" "$golden/ids.txt" "$ctx" "$work/${p}logits_ctx$ctx.f32" \
      "$work/${p}greedy_ctx$ctx.txt" >"$work/${p}ctx$ctx.log" 2>&1 || { cat "$work/${p}ctx$ctx.log" >&2; exit 1; }
    # llama.cpp's own load log: the two keys read, the 23 tensors (21 + the two factor tensors), the
    # original context it compares n_ctx_seq with (llama-model.cpp get_rope_factors), n_rot.
    echo "${p}ctx $ctx, llama.cpp's log:"
    grep -E 'rope\.scaling\.|rope\.dimension_count|type +f32: |n_rot +=|n_ctx_orig_yarn|n_ctx_seq +=|llamacpp_logits:' \
      "$work/${p}ctx$ctx.log" | sed 's/^/  /'
    if ! grep -q 'n_ctx_orig_yarn *= 256$' "$work/${p}ctx$ctx.log" ||
       ! grep -q 'phi3.rope.scaling.attn_factor *f32 *= 1.224745$' "$work/${p}ctx$ctx.log" ||
       ! grep -q 'type  *f32: *23 tensors' "$work/${p}ctx$ctx.log" ||
       ! grep -q "print_info: n_rot  *= $n_rot$" "$work/${p}ctx$ctx.log" ||
       ! grep -q "n_ctx_seq  *= $ctx$" "$work/${p}ctx$ctx.log"; then
      echo "llamacpp_longrope_golden.sh: llama.cpp did not load the ${p}LongRoPE GGUF as expected (ctx $ctx)" >&2
      exit 1
    fi
  done
}

python3 "$root/scripts/longrope_gguf.py" "$golden/model.gguf" "$work/longrope.gguf"
run_variant "" 16
# Partial rotary (as Phi-4-mini, partial_rotary_factor 0.75): phi3.rope.dimension_count 8 of head_dim 16,
# 4 factors each; llama.cpp rotates the first 8 dims of each head, the other 8 pass through.
python3 "$root/scripts/longrope_gguf.py" "$golden/model.gguf" "$work/rot8_longrope.gguf" --rope-dims 8
run_variant rot8_ 8

# Prints one variant's figures and stops unless its two runs differ from each other and from the
# reference files (equal files would mean llama.cpp ignored the factors, or n_rot).
check_variant() {
  local label="$1" run256="$2" run512="$3" ref256="$4" ref512="$5" d_runs max256 max512 d256 d512
  read -r d_runs max256 max512 <<<"$(compare "$run256" "$run512")"
  read -r d256 _ _ <<<"$(compare "$run256" "$ref256")"
  read -r d512 _ _ <<<"$(compare "$run512" "$ref512")"
  echo "$label: max abs diff ctx256 vs ctx512: $d_runs; vs its reference: ctx256 $d256, ctx512 $d512"
  echo "$label: max abs logit: ctx256 $max256, ctx512 $max512"
  if ! python3 -c "import sys; sys.exit(min(map(float, sys.argv[1:])) < 0.1)" "$d_runs" "$d256" "$d512"; then
    echo "llamacpp_longrope_golden.sh: the $label runs barely differ; nothing written" >&2
    exit 1
  fi
}
# LongRoPE against the phi3 golden without it; partial rotary against full rotary.
check_variant longrope "$work/logits_ctx256.f32" "$work/logits_ctx512.f32" "$golden/logits.f32" "$golden/logits.f32"
check_variant rot8 "$work/rot8_logits_ctx256.f32" "$work/rot8_logits_ctx512.f32" "$work/logits_ctx256.f32" \
  "$work/logits_ctx512.f32"

files=(logits_ctx256.f32 greedy_ctx256.txt logits_ctx512.f32 greedy_ctx512.txt
       rot8_logits_ctx256.f32 rot8_greedy_ctx256.txt rot8_logits_ctx512.f32 rot8_greedy_ctx512.txt)
mkdir -p "$out"
for f in "${files[@]}"; do cp "$work/$f" "$out/$f"; done
echo "wrote $out (llama.cpp $commit):"
(cd "$out" && sha256sum "${files[@]}" | sed 's/^/  /')

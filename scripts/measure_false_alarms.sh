#!/usr/bin/env bash
# The false-alarm rate of the gate's three outcomes (docs/decision.md "Three outcomes"): the same
# configurations evaluated on SETS disjoint sets of WINDOWS windows each, every set gated alone by
# strict and balanced (their fidelity criteria), and the verdicts compared between every two sets.
# A flip is one set saying PASS and another FAIL for the same case (configuration, criterion,
# context range) or configuration; INCONCLUSIVE is neither. The same comparison of the point
# estimates against the thresholds (the gate before intervals) is printed beside it.
# Usage: scripts/measure_false_alarms.sh BIN OUTDIR [SETS] [WINDOWS] [CTX]
set -euo pipefail
BIN=$1 OUT=$2 SETS=${3:-10} WINDOWS=${4:-8} CTX=${5:-1024}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
for preset in strict balanced; do
  printf 'extends = "%s"\n[probes.needle]\nrequired = false\n[probes.drift]\nrequired = false\n' "$preset" \
    > "$OUT/$preset-fidelity.toml"
done
for ((s = 0; s < SETS; s++)); do
  dir="$OUT/set$s"
  "$BIN" eval --model "$ROOT/models/kvq-code-16m" --data "$ROOT/data/eval-docs.jsonl" --ctx "$CTX" \
    --windows "$WINDOWS" --first-window $((s * WINDOWS)) --attn-samples 0 --threads 2 \
    --kv k=f32,v=f32 --kv k=q8_0,v=q8_0 --kv k=q8_0,v=q4_0 --kv k=q4_0,v=q4_0 --out "$dir" > "$dir.log" 2>&1
  for preset in strict balanced; do
    "$BIN" gate --results "$dir" --policy "$OUT/$preset-fidelity.toml" --json > "$dir/gate-$preset.json" || true
  done
done
python3 - "$OUT" "$SETS" <<'PY'
import itertools, json, sys
out, sets = sys.argv[1], int(sys.argv[2])
for preset in ("strict", "balanced"):
    runs = [json.load(open(f"{out}/set{s}/gate-{preset}.json")) for s in range(sets)]
    def table(run, point):
        cases, configs = {}, {}
        for c in run["configs"]:
            worst = "PASS"
            for k in c["cases"]:
                if point:
                    ok = k["measured"] >= k["threshold"] if k["criterion"].endswith("_min") else k["measured"] <= k["threshold"]
                    o = "PASS" if ok else "FAIL"
                else:
                    o = k["outcome"]
                cases[(c["config"], k["criterion"], k["scope"])] = o
                if o == "FAIL" or (o == "INCONCLUSIVE" and worst == "PASS"):
                    worst = o
            configs[c["config"]] = worst
        return cases, configs
    for point in (False, True):
        tables = [table(r, point) for r in runs]
        for level in (0, 1):
            flips = pairs = 0
            counts = {}
            for a, b in itertools.combinations(tables, 2):
                for key, oa in a[level].items():
                    ob = b[level].get(key)
                    if ob is None: continue
                    pairs += 1
                    flips += {oa, ob} == {"PASS", "FAIL"}
            for t in tables:
                for key, o in t[level].items():
                    counts[o] = counts.get(o, 0) + 1
            what = ("cases", "configurations")[level]
            how = "point estimates" if point else "intervals"
            print(f"{preset:8s} {how:15s} {what:14s}: {flips} flips in {pairs} pairs ({100.0 * flips / max(pairs, 1):.1f}%); outcomes {counts}")
    f32 = [t[1].get("k=f32,v=f32") for t in (table(r, False) for r in runs)]
    print(f"{preset:8s} k=f32,v=f32 against itself: {f32.count('PASS')} of {len(f32)} sets PASS")
PY

#!/usr/bin/env python3
"""The scale-out cost model (docs/scale-out.md "Cost model"): how the time of an eval and a probe
run on the bundled model shrinks when it is split into N shards.

  python3 bench/scale_out_cost.py [--build build/release] [--shards 1,2,4] [--rounds 3] [--threads 2]
                                  [--jobs eval,probe] [--audit]

There is one machine here (2 cores), so each shard is timed alone, one after the other, with the
same --threads, as it would run on its own identical machine; for each N it prints the medians over
the rounds of: the slowest shard (the wall time on N machines, before the merge), the sum of the
shards (the machine time paid), the merge, and the speedup max-shard + merge against the unsharded
run measured in the same round. Also timed: a shard that owns no unit (model load, data, plan:
the fixed cost every shard pays). Every run is --restart into a fresh directory; the merged
results are checked equal to the unsharded ones (but `run`). --audit: a --budget audit of the
bundled model in rounds, each round's shards timed one after the other as above, the critical
path being the sum over the rounds of the slowest shard and the merge, plus the final unsharded
run. Stdlib only.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = ["--model", os.path.join(ROOT, "models/kvq-code-16m"), "--data", os.path.join(ROOT, "data/eval-docs.jsonl")]
AUDIT = ["audit", *MODEL, "--ctx", "256", "--windows", "2", "--calib-windows", "2", "--lengths", "256",
         "--attn-samples", "4", "--budget", "1800"]
JOBS = {
    "eval": ["eval", *MODEL, "--ctx", "1024", "--windows", "8", "--attn-samples", "8",
             "--kv", "k=q8_0,v=q8_0", "--kv", "k=q4_0,v=q4_0"],
    "probe": ["probe", *MODEL, "--family", "needle,variance", "--lengths", "512,1024",
              "--kv", "k=q8_0,v=q8_0", "--kv", "k=q4_0,v=q4_0"],
}


def timed(cmd):
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def without_run(path):
    with open(os.path.join(path, "results.json")) as f:
        j = json.load(f)
    j.pop("run", None)
    return j


def timed_json(cmd):
    t0 = time.monotonic()
    r = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0, json.loads(r.stdout)


def audit_round(binary, shard_counts, threads, tmp):
    """A --budget audit in rounds (docs/scale-out.md "Staged jobs"): per N, the critical path
    (each round's slowest shard + its merge, then the final unsharded run) and the machine time."""
    base = [binary, *AUDIT, "--threads", str(threads), "--restart"]
    t0 = time.monotonic()  # exit 1 is a verdict
    subprocess.run(base + ["--out", os.path.join(tmp, "audit-whole")], check=False, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    out = {"unsharded": time.monotonic() - t0}
    for n in shard_counts:
        merged = os.path.join(tmp, f"audit-{n}-merged")
        dirs = [os.path.join(tmp, f"audit-{n}-{i}") for i in range(n)]
        path = total = 0.0
        rounds = 0
        while True:
            rounds += 1
            times = [timed(base[:-1] + ["--shard", f"{i}/{n}", "--merged", merged, "--out", d]) for i, d in enumerate(dirs)]
            merge, summary = timed_json([binary, "merge", *dirs, "--out", merged, "--json"])
            path += max(times) + merge
            total += sum(times) + merge
            if not summary["more_rounds"] or rounds > 8:
                break
        t0 = time.monotonic()
        subprocess.run(base[:-1] + ["--out", merged], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        final = time.monotonic() - t0
        out[n] = {"max": path + final, "sum": total + final, "merge": final, "rounds": rounds}
        for d in [merged, *dirs]:
            subprocess.run(["rm", "-rf", d], check=True)
    return out


def one_round(binary, job, shard_counts, threads, tmp):
    base = [binary, *JOBS[job], "--threads", str(threads), "--restart"]
    whole = os.path.join(tmp, f"{job}-whole")
    out = {"unsharded": timed(base + ["--out", whole])}
    for n in shard_counts:
        dirs, times = [], []
        for i in range(n):
            dirs.append(os.path.join(tmp, f"{job}-{n}-{i}"))
            times.append(timed(base + ["--shard", f"{i}/{n}", "--out", dirs[-1]]))
        merged = os.path.join(tmp, f"{job}-{n}-merged")
        merge = timed([binary, "merge", *dirs, "--out", merged])
        if without_run(merged) != without_run(whole):
            raise SystemExit(f"{job}: the merge of {n} shards differs from the unsharded results")
        out[n] = {"max": max(times), "sum": sum(times), "merge": merge}
    # A shard with no unit: more shards than units (eval: 8 windows; probe: fewer than 1000 units).
    out["empty"] = timed(base + ["--shard", "999/1000", "--out", os.path.join(tmp, f"{job}-empty")])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--audit", action="store_true", help="also a --budget audit in rounds (minutes)")
    ap.add_argument("--jobs", default="eval,probe", help="of eval,probe (empty: none)")
    a = ap.parse_args()
    binary = os.path.join(a.build, "kvaudit")
    counts = [int(x) for x in a.shards.split(",")]
    med = statistics.median
    print(f"# {time.strftime('%Y-%m-%d')} {os.uname().nodename} threads={a.threads} rounds={a.rounds}")
    print("job    N  max shard s  sum s  merge s  speedup  (unsharded s; empty shard s)")
    with tempfile.TemporaryDirectory(prefix="kvaudit-scale-") as tmp:
        for job in [j for j in a.jobs.split(",") if j]:
            rounds = [one_round(binary, job, counts, a.threads, tmp) for _ in range(a.rounds)]
            whole = med(r["unsharded"] for r in rounds)
            empty = med(r["empty"] for r in rounds)
            for n in counts:
                mx, sm, mg = (med(r[n][k] for r in rounds) for k in ("max", "sum", "merge"))
                speedup = med(r["unsharded"] / (r[n]["max"] + r[n]["merge"]) for r in rounds)
                print(f"{job:6} {n:2} {mx:11.2f} {sm:6.2f} {mg:8.2f} {speedup:7.2f}  ({whole:.2f}; {empty:.2f})")
        if a.audit:
            rounds = [audit_round(binary, counts, a.threads, tmp) for _ in range(a.rounds)]
            whole = med(r["unsharded"] for r in rounds)
            print("audit --budget in rounds: N, critical path s (rounds' slowest shard + merge, + final run), "
                  "machine s, final run s, speedup (unsharded s), rounds")
            for n in counts:
                path, total, final = (med(r[n][k] for r in rounds) for k in ("max", "sum", "merge"))
                speedup = med(r["unsharded"] / r[n]["max"] for r in rounds)
                print(f"audit  {n:2} {path:11.2f} {total:6.2f} {final:8.2f} {speedup:7.2f}  ({whole:.2f}) "
                      f"{rounds[0][n]['rounds']}")


if __name__ == "__main__":
    main()

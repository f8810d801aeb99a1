#!/usr/bin/env python3
"""Long context at real size (BENCHMARKS.md "Long context at real size"; docs/scale-out.md "Cost
model"): what an eval window and a whole audit cost at 8k-32k tokens on this machine and on N
machines, from measured terms.

Measure (minutes; 2 threads; the machine otherwise idle):
  python3 bench/longctx_cost.py measure --build B --save M.json MODEL.gguf...
per model, in llama.cpp's arithmetic (engine=llama.cpp, the audit's default target):
  - prefill tokens/s of PROMPT tokens (forward_bench ... pp llama.cpp: 512-token chunks, f32 cache)
    alternating with llama-bench -p PROMPT -n 0 -fa 1 --no-warmup, per --prompts length and round;
  - decode tokens/s at depth 0 (forward_bench ... tg0 llama.cpp: 128 tokens);
  - prefill with every position's logits, as eval scores a window (forward_bench ... ppall llama.cpp),
    at the first --prompts length: the output matrix on every row (1B shape: +21% of the FLOPs);
  - prefill attention alone, one layer in the model's shape, per cache spec and --attn-ctx length
    (prefill_attention_bench CTX 1 2 MODEL SPEC...), times the model's layers;
  - one whole prefill at --check-ctx, the model's check.
--attention-from EARLIER.json takes the attention terms from an earlier measurement of the same
models instead (they time the attention alone, which a change to the weight products leaves as it is).
One eval window as the audit runs it (its eval stage under the default target llama.cpp: an f32
baseline, q8_0 and q4_0, --attn-samples 16), timed whole, with its peak RSS (results.json's run):
  python3 bench/longctx_cost.py window --build B --save M.json --model MODEL.gguf --ctx CTX [--attn-samples 0]
Cost (instant):
  python3 bench/longctx_cost.py cost --load M.json --model MODEL.gguf --work WORK.jsonl [--nodes 1,2,4,8]
where WORK.jsonl is bench/audit_work's list of the audit's units. The model of one cache run over a
prompt of L tokens then g generated:  T = a L + A_spec(L) + g / decode,  with a the weights' time per
token (the prefill's time less its attention, median over the measured lengths), A_spec(L) = c1 L +
c2 L^2 least squares over the attention lengths, per spec; an eval window's runs take a_all (the
prefill with every position's logits) for a. The units are split as `--shard I/N` splits them (run/shard.h: greedy
longest-processing-time on each stage's token costs, eval and probe each), and a machine's time is
the sum of its units' T; N machines take the slowest. Stdlib only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = ["k=f32,v=f32,engine=llama.cpp", "k=q8_0,v=q8_0,engine=llama.cpp", "k=q4_0,v=q4_0,engine=llama.cpp"]


def run(cmd):
    """Runs from the repository root (scripts/, data/); main() makes every path given absolute."""
    return subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True).stdout


def ours_rate(build, model, n, what):
    out = run([f"{build}/bench/forward_bench", model, "2", str(n), "0", "1", what, "llama.cpp"])
    m = re.search(r"(?:prefill|decode) \d+ tokens(?: at depth 0| \(every position's logits\))?: ([\d.]+) tokens/s",
                  out)
    return float(m.group(1))


def llama_rate(llama_bin, model, n):
    out = run([f"{llama_bin}/llama-bench", "-m", model, "-t", "2", "-p", str(n), "-n", "0", "-fa", "1", "-r", "1",
               "--no-warmup", "-o", "json"])
    return float(json.loads(out)[0]["avg_ts"])


def attention(build, model, ctx):
    """{spec: seconds of the whole model's prefill attention over ctx tokens}"""
    out = run([f"{build}/bench/prefill_attention_bench", str(ctx), "1", "2", model, *SPECS])
    rows = re.finditer(r"^\s+(\S+)\s+([\d.]+)\s+\[.*\]\s+x (\d+) layers", out, re.M)
    return {m.group(1): float(m.group(2)) * int(m.group(3)) for m in rows}


def stamp():
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load {open('/proc/loadavg').read().split()[0]}"


def measure(a):
    llama_bin = run(["scripts/build_llamacpp.sh"]).strip()
    rev = run(["git", "rev-parse", "--short", "HEAD"]).strip()
    saved = {"started": stamp(), "kvaudit": rev, "models": {}}
    for model in a.models:
        m = {"prefill": [], "attention": {}}
        print(f"# {model}: {stamp()}", flush=True)
        for r in range(a.rounds):
            for n in a.prompts:
                ours = ours_rate(a.build, model, n, "pp")
                theirs = llama_rate(llama_bin, model, n)
                m["prefill"].append({"round": r, "tokens": n, "kvaudit": ours, "llama.cpp": theirs})
                print(f"round {r} prefill {n}: kvaudit {ours:.2f} tokens/s, llama.cpp {theirs:.2f} ({stamp()})", flush=True)
        m["decode"] = ours_rate(a.build, model, 128, "tg0")
        m["prefill_all"] = {"tokens": a.prompts[0], "kvaudit": ours_rate(a.build, model, a.prompts[0], "ppall")}
        print(f"prefill {a.prompts[0]} with every logit: {m['prefill_all']['kvaudit']:.2f} tokens/s", flush=True)
        print(f"decode at depth 0: {m['decode']:.2f} tokens/s", flush=True)
        if a.attention_from:  # the attention alone does not depend on the weight products: reuse its terms
            with open(a.attention_from) as f:
                earlier = json.load(f)
            m["attention"] = earlier["models"][model]["attention"]
            m["attention_from"] = f"{a.attention_from}: kvaudit {earlier['kvaudit']}, {earlier['started']}"
        for ctx in [] if a.attention_from else a.attn_ctx:
            m["attention"][str(ctx)] = attention(a.build, model, ctx)
            print(f"attention {ctx}: {m['attention'][str(ctx)]} ({stamp()})", flush=True)
        if a.check_ctx:
            m["check"] = {"tokens": a.check_ctx, "kvaudit": ours_rate(a.build, model, a.check_ctx, "pp")}
            print(f"check prefill {a.check_ctx}: {m['check']['kvaudit']:.2f} tokens/s ({stamp()})", flush=True)
        saved["models"][model] = m
        with open(a.save, "w") as f:
            json.dump(saved, f, indent=1)
    saved["finished"] = stamp()
    with open(a.save, "w") as f:
        json.dump(saved, f, indent=1)


def window(a):
    """One eval window of --ctx tokens as the audit's eval stage runs it, into --save's model entry."""
    with open(a.save) as f:
        saved = json.load(f)
    out = f"/tmp/kvaudit-longctx-window-{os.getpid()}"
    cmd = [f"{a.build}/kvaudit", "eval", "--model", a.model, "--data", "data/eval-docs.jsonl", "--ctx", str(a.ctx),
           "--windows", "1", "--attn-samples", str(a.attn_samples), "--threads", "2", "--baseline", SPECS[0], "--kv", SPECS[1],
           "--kv", SPECS[2], "--out", out, "--restart"]
    started = stamp()
    run(cmd)
    with open(os.path.join(out, "results.json")) as f:
        r = json.load(f)["run"]
    subprocess.run(["rm", "-rf", out], check=True)
    entry = {"started": started, "wall_s": r["wall_s"], "peak_rss_mb": r["peak_rss_mb"], "command": " ".join(cmd)}
    key = str(a.ctx) if a.attn_samples == 16 else f"{a.ctx}, --attn-samples {a.attn_samples}"
    saved["models"][a.model].setdefault("window", {})[key] = entry
    print(f"eval window of {a.ctx}: {entry}", flush=True)
    with open(a.save, "w") as f:
        json.dump(saved, f, indent=1)


def logits(a):
    """Adds the prefill with every position's logits to --save's model entry (a run before it had none)."""
    with open(a.save) as f:
        saved = json.load(f)
    rate = ours_rate(a.build, a.model, a.tokens, "ppall")
    saved["models"][a.model]["prefill_all"] = {"tokens": a.tokens, "kvaudit": rate, "measured": stamp()}
    print(f"prefill {a.tokens} with every logit: {rate:.2f} tokens/s", flush=True)
    with open(a.save, "w") as f:
        json.dump(saved, f, indent=1)


def fit_quadratic(points):
    """c1, c2 of t = c1 L + c2 L^2, least squares through the origin."""
    s11 = sum(L * L for L, _ in points)
    s12 = sum(L ** 3 for L, _ in points)
    s22 = sum(L ** 4 for L, _ in points)
    b1 = sum(L * t for L, t in points)
    b2 = sum(L * L * t for L, t in points)
    det = s11 * s22 - s12 * s12
    return (b1 * s22 - b2 * s12) / det, (s11 * b2 - s12 * b1) / det


class Model:
    def __init__(self, m):
        self.attn = {}
        for spec in SPECS:
            c1, c2 = fit_quadratic([(int(L), by[spec]) for L, by in m["attention"].items()])
            self.attn[spec] = lambda L, c1=c1, c2=c2: c1 * L + c2 * L * L
        per_token = [(p["tokens"] / p["kvaudit"] - self.attn[SPECS[0]](p["tokens"])) / p["tokens"] for p in m["prefill"]]
        self.a = statistics.median(per_token)
        every = m["prefill_all"]
        self.a_all = (every["tokens"] / every["kvaudit"] - self.attn[SPECS[0]](every["tokens"])) / every["tokens"]
        self.decode = m["decode"]

    def run_s(self, spec, prompt, generated=0, every_logit=False):
        return (self.a_all if every_logit else self.a) * prompt + self.attn[spec](prompt) + generated / self.decode


def shard_units(costs, index, count):
    """run/shard.h ShardUnits: LPT by cost, ties to the lower unit, then to the lower shard."""
    totals = [0] * count
    mine = []
    for u in sorted(range(len(costs)), key=lambda u: (-costs[u], u)):
        s = min(range(count), key=lambda s: (totals[s], s))
        totals[s] += costs[u]
        if s == index:
            mine.append(u)
    return mine


def cost(a):
    with open(a.load) as f:
        saved = json.load(f)
    m = saved["models"][a.model]
    model = Model(m)
    print(f"# measured {saved['started']} .. {saved.get('finished', '?')}, kvaudit {saved['kvaudit']}: {a.model}")
    print(f"weights: {model.a * 1e3:.1f} ms per prefill token, {model.a_all * 1e3:.1f} with every position's logits; "
          f"decode {model.decode:.2f} tokens/s")
    for p in m["prefill"]:
        print(f"prefill {p['tokens']}: kvaudit {p['kvaudit']:.2f} tokens/s, llama-bench {p['llama.cpp']:.2f} "
              f"({p['kvaudit'] / p['llama.cpp']:.2f}x)")
    if "check" in m:
        n = m["check"]["tokens"]
        print(f"check: prefill {n} measured {n / m['check']['kvaudit']:.1f} s, model {model.run_s(SPECS[0], n):.1f} s")
    for L, w in m.get("window", {}).items():
        model_s = sum(model.run_s(spec, int(L.split(",")[0]), every_logit=True) for spec in SPECS)
        print(f"eval window of {L} (f32 + q8_0 + q4_0): measured {w['wall_s']:.0f} s, model {model_s:.0f} s; "
              f"peak RSS {w['peak_rss_mb']:.0f} MB")
    for L in a.windows:
        cells = ", ".join(f"{spec.split(',')[0][2:]} {model.run_s(spec, L, every_logit=True):.0f} s (attention "
                          f"{model.attn[spec](L) / model.run_s(spec, L, every_logit=True):.0%})" for spec in SPECS)
        print(f"one eval cache run over {L} tokens: {cells}")
    if not a.work:
        return
    units = [json.loads(line) for line in open(a.work)]
    specs = [SPECS[0]] + a.specs
    unknown = [s for s in a.specs if s not in model.attn]
    if unknown:
        raise SystemExit(f"--specs {' '.join(unknown)}: no attention measured for it; the measured caches: "
                         f"{' '.join(SPECS[1:])}")

    def unit_s(u):
        if u["runs"] % len(specs):
            raise SystemExit(f"{u['id']}: {u['runs']} cache runs, not a multiple of the {len(specs)} caches priced "
                             "(the baseline and --specs); give one --specs entry per configuration audited")
        per_run = u["runs"] // len(specs)  # a variance prompt runs once per sample
        every = u["stage"] == "eval"
        return per_run * sum(model.run_s(s, u["prompt"], u["generated"], every) for s in specs)

    seconds = [unit_s(u) for u in units]
    for stage in ("eval", "probe"):
        mine = [s for u, s in zip(units, seconds) if u["stage"] == stage]
        print(f"{stage}: {len(mine)} units, {sum(mine) / 3600:.2f} h on one machine")
    print(f"audit (eval + probes; the verdict and report take seconds): {sum(seconds) / 3600:.2f} h on one machine")
    for n in a.nodes:
        shard_s = [0.0] * n
        for stage in ("eval", "probe"):
            idx = [i for i, u in enumerate(units) if u["stage"] == stage]
            costs = [units[i]["prompt"] * units[i]["runs"] + units[i]["generated"] * units[i]["runs"] for i in idx]
            for k in range(n):
                shard_s[k] += sum(seconds[idx[j]] for j in shard_units(costs, k, n))
        print(f"N = {n}: slowest machine {max(shard_s) / 3600:.2f} h, the sum {sum(shard_s) / 3600:.2f} h")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    me = sub.add_parser("measure")
    me.add_argument("--build", required=True)
    me.add_argument("--save", required=True)
    me.add_argument("--rounds", type=int, default=1)
    me.add_argument("--prompts", type=lambda s: [int(x) for x in s.split(",")], default=[512, 2048])
    me.add_argument("--attn-ctx", type=lambda s: [int(x) for x in s.split(",")], default=[4096, 8192, 16384])
    me.add_argument("--check-ctx", type=int, default=0)
    me.add_argument("--attention-from", default="",
                    help="an earlier --save of the same models: its attention terms, not measured again")
    me.add_argument("models", nargs="+")
    wi = sub.add_parser("window")
    wi.add_argument("--build", required=True)
    wi.add_argument("--save", required=True)
    wi.add_argument("--model", required=True)
    wi.add_argument("--ctx", type=int, required=True)
    wi.add_argument("--attn-samples", type=int, default=16, help="the audit's eval default; 0: the diagnosis off")
    lo = sub.add_parser("logits")
    lo.add_argument("--build", required=True)
    lo.add_argument("--save", required=True)
    lo.add_argument("--model", required=True)
    lo.add_argument("--tokens", type=int, default=512)
    co = sub.add_parser("cost")
    co.add_argument("--load", required=True)
    co.add_argument("--model", required=True)
    co.add_argument("--work", default="")
    co.add_argument("--specs", type=lambda s: s.split(" "), default=SPECS[1:])
    co.add_argument("--windows", type=lambda s: [int(x) for x in s.split(",")], default=[8192, 32768])
    co.add_argument("--nodes", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8, 16])
    a = ap.parse_args()
    for key in ("build", "save", "load", "model", "work", "attention_from"):  # the JSON names a model by its absolute path
        if getattr(a, key, ""):
            setattr(a, key, os.path.abspath(getattr(a, key)))
    if a.cmd == "measure":
        a.models = [os.path.abspath(m) for m in a.models]
    {"measure": measure, "window": window, "logits": logits, "cost": cost}[a.cmd](a)


if __name__ == "__main__":
    main()

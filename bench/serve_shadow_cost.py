#!/usr/bin/env python3
"""What `kvaudit serve --shadow-rate 1` costs per request (docs/serve.md "Shadow fidelity").

  python3 bench/serve_shadow_cost.py [--build build/release] [--kv k=q4_0,v=q4_0] [--rounds 3]
                                     [--lengths 64,1000] [--max-tokens 32] [--threads 2]

Starts the server on the bundled model with every request shadowed, sends greedy completions whose
prompts are the first N tokens of data/eval-docs.jsonl's longest document (N = each length), one at
a time, waiting for each one's shadow line in --shadow-log before the next (so nothing overlaps),
and prints per length the medians over the rounds (after one warm-up request) of: the client's wall
time for the request, the worker's wall / process-CPU seconds for the served run, the same for the
shadow run, and shadow / request. --no-shadow runs the same requests on a server without it (the client's wall
time only), to show what recording the served logits adds to a shadowed request. Loopback only;
stdlib only.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--kv", default="k=q4_0,v=q4_0")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lengths", default="64,1000")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-shadow", action="store_true")
    a = ap.parse_args()
    log = os.path.join(tempfile.mkdtemp(prefix="kvaudit-shadow-bench."), "shadow.jsonl")
    cmd = [os.path.join(a.build, "kvaudit"), "serve", "--model", os.path.join(ROOT, "models", "kvq-code-16m"),
           "--kv", a.kv, "--threads", str(a.threads), "--port", "0", "--ctx", "2048"]
    if not a.no_shadow:
        cmd += ["--shadow-rate", "1", "--shadow-log", log]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
        with open(os.path.join(ROOT, "data", "eval-docs.jsonl")) as f:
            text = max((json.loads(x)["text"] for x in f), key=len)
        ids = post(port, "/tokenize", {"content": text, "add_special": True})["tokens"]
        print(f"# {' '.join(cmd[1:])}\n# load: {open('/proc/loadavg').read().split()[:3]}")
        print("prompt gen | client_wall req_wall req_cpu | shadow_wall shadow_cpu | shadow/req wall cpu")
        for n in [int(x) for x in a.lengths.split(",")]:
            rows = []
            for r in range(a.rounds + 1):  # the first is a warm-up
                before = 0 if a.no_shadow else len(lines(log))
                t0 = time.perf_counter()
                out = post(port, "/v1/completions", {"prompt": ids[:n], "max_tokens": a.max_tokens, "temperature": 0})
                wall = time.perf_counter() - t0
                if a.no_shadow:
                    rows.append((wall, out["usage"]["completion_tokens"])) if r > 0 else None
                    continue
                deadline = time.time() + 300
                while len(lines(log)) == before and time.time() < deadline:
                    time.sleep(0.01)
                line = lines(log)[-1]
                if r > 0:
                    rows.append((wall, line["request_seconds"], line["request_cpu_seconds"], line["shadow_seconds"],
                                 line["shadow_cpu_seconds"], out["usage"]["completion_tokens"]))
            med = [statistics.median(c) for c in zip(*rows)]
            if a.no_shadow:
                print(f"{n:6d} {int(med[1]):3d} | {med[0]:.4f} (no shadow)")
                continue
            print(f"{n:6d} {int(med[5]):3d} | {med[0]:.4f} {med[1]:.4f} {med[2]:.4f} | {med[3]:.4f} {med[4]:.4f} | "
                  f"{med[3] / med[1]:.2f} {med[4] / med[2]:.2f}")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()

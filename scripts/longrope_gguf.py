#!/usr/bin/env python3
"""Writes the Phi-3 LongRoPE test GGUF: the tiny phi3 golden ($KVAUDIT_FIXTURES/golden/llamacpp/phi3/
model.gguf) with every key and tensor kept as they are, plus the two keys and two tensors that
llama.cpp's converter writes for a Phi-3 model with LongRoPE scaling (convert_hf_to_gguf.py, the
Phi-3 class: add_rope_scaling_orig_ctx_len, add_rope_scaling_attn_factors, rope_factors_long/short).
Python standard library only (GGUF v3, docs: ggml-org/ggml docs/gguf.md).

  longrope_gguf.py TEMPLATE.gguf OUT.gguf [--rope-dims N]

--rope-dims N (partial rotary embeddings, as Phi-4-mini's partial_rotary_factor 0.75: 96 of 128):
the template's phi3.rope.dimension_count value is replaced by N (same key, type UINT32 and position;
even, 2 <= N <= head_dim = embedding_length / head_count = 16) and the two factor tensors get N/2
elements, same formulas. Default: the template's own dimension_count (16), the file below unchanged.

Added after the template's keys (llama.cpp reads them in llama-model.cpp,
LLM_KV_ROPE_SCALING_ORIG_CTX_LEN and LLM_KV_ROPE_SCALING_ATTN_FACTOR):
  phi3.rope.scaling.original_context_length  UINT32   256
  phi3.rope.scaling.attn_factor              FLOAT32  f32(sqrt(1 + ln(4096/256) / ln(256))) = f32(sqrt(1.5))
Added after the template's tensors (F32, 1-D, ne0 = dimension_count/2 = 8; llama.cpp creates them
in src/models/phi3.cpp with {n_rot/2}), i = 0 .. dimension_count/2 - 1:
  rope_factors_long.weight   f32(1 + 4 i)          = 1, 5, ..., 29
  rope_factors_short.weight  f32(1.0 + 0.05 i)     (computed in double, then rounded to f32)
Alignment 32 (the template has no general.alignment key), every tensor padded to it, as gguf-py does.
tests/data/phi3_longrope/README.md holds the same spec; kvaudit's test rebuilds this file byte for byte.
"""
import argparse
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from synth_attention_gguf import gguf_head, load_header, write_str  # noqa: E402

ALIGN = 32
F32 = 0
UINT32, FLOAT32 = 4, 6
ORIG_CTX = 256


def pad(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def load(path):
    """(kv [(key, type, value)], tensors [(name, dims, type, raw bytes)]) of an all-F32 GGUF v3."""
    with open(path, "rb") as f:
        blob = f.read()
    kv, infos, data_start = load_header(path)
    if any(k == "general.alignment" for k, _, _ in kv):
        sys.exit("%s: has general.alignment; this writer assumes the default 32" % path)
    tensors, expect = [], 0
    for name, dims, t, offset in infos:
        if t != F32:
            sys.exit("%s: tensor %s has ggml type %d; this writer copies F32 only" % (path, name, t))
        if offset != expect:
            sys.exit("%s: tensor %s at offset %d, expected %d (gguf-py's padded layout)" % (path, name, offset, expect))
        size = 4 * math.prod(dims)
        tensors.append((name, dims, t, blob[data_start + offset:data_start + offset + size]))
        expect = pad(offset + size)
    return kv, tensors


def value(kv, key):
    return next(v for k, _, v in kv if k == key)


def longrope(kv, tensors, rope_dims=None):
    """rope_dims: the new {arch}.rope.dimension_count (None: the template's); N/2 factors each."""
    arch = value(kv, "general.architecture").decode()
    ctx = value(kv, arch + ".context_length")
    attn_factor = math.sqrt(1 + math.log(ctx / ORIG_CTX) / math.log(ORIG_CTX))
    dims_key = arch + ".rope.dimension_count"
    if sum(k == dims_key for k, _, _ in kv) != 1 or next(t for k, t, _ in kv if k == dims_key) != UINT32:
        sys.exit("the template has no single UINT32 %s" % dims_key)
    head_dim = value(kv, arch + ".embedding_length") // value(kv, arch + ".attention.head_count")
    if rope_dims is None:
        rope_dims = value(kv, dims_key)
    if rope_dims % 2 or not 2 <= rope_dims <= head_dim:
        sys.exit("--rope-dims %d: must be even, 2 <= N <= head_dim (%d)" % (rope_dims, head_dim))
    n_factors = rope_dims // 2
    # The dimension count replaced in place (same key, type and position; unchanged by default).
    kv = [(k, t, rope_dims if k == dims_key else v) for k, t, v in kv]
    kv = kv + [
        (arch + ".rope.scaling.original_context_length", UINT32, ORIG_CTX),
        (arch + ".rope.scaling.attn_factor", FLOAT32, attn_factor),  # packed '<f': nearest f32
    ]
    long_ = struct.pack("<%df" % n_factors, *[1 + 4 * i for i in range(n_factors)])
    short = struct.pack("<%df" % n_factors, *[1.0 + 0.05 * i for i in range(n_factors)])
    tensors = tensors + [
        ("rope_factors_long.weight", (n_factors,), F32, long_),
        ("rope_factors_short.weight", (n_factors,), F32, short),
    ]
    return kv, tensors


def write(path, kv, tensors):
    head = gguf_head(kv, len(tensors))
    data, offset = bytearray(), 0
    for name, dims, t, raw in tensors:
        write_str(head, name.encode())
        head += struct.pack("<I", len(dims)) + struct.pack("<" + "Q" * len(dims), *dims)
        head += struct.pack("<IQ", t, len(data))
        data += raw + bytes(-len(raw) % ALIGN)
    head += bytes(-len(head) % ALIGN)
    with open(path, "wb") as f:
        f.write(head + data)


def main():
    ap = argparse.ArgumentParser(description="Writes the Phi-3 LongRoPE test GGUF from the tiny phi3 golden.")
    ap.add_argument("template")
    ap.add_argument("out")
    ap.add_argument("--rope-dims", type=int, default=None, metavar="N",
                    help="phi3.rope.dimension_count of the output (partial rotary); default: the template's")
    a = ap.parse_args()
    kv, tensors = load(a.template)
    if value(kv, "general.architecture") != b"phi3":
        sys.exit("%s: not a phi3 GGUF" % a.template)
    write(a.out, *longrope(kv, tensors, a.rope_dims))


if __name__ == "__main__":
    main()

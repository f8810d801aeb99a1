#!/usr/bin/env python3
"""Writes the Phi-3 LongRoPE test GGUF: the tiny phi3 golden ($KVAUDIT_FIXTURES/golden/llamacpp/phi3/
model.gguf) with every key and tensor kept as they are, plus the two keys and two tensors that
llama.cpp's converter writes for a Phi-3 model with LongRoPE scaling (convert_hf_to_gguf.py, the
Phi-3 class: add_rope_scaling_orig_ctx_len, add_rope_scaling_attn_factors, rope_factors_long/short).
Python standard library only (GGUF v3, docs: ggml-org/ggml docs/gguf.md).

  longrope_gguf.py TEMPLATE.gguf OUT.gguf

Added after the template's keys (llama.cpp reads them in llama-model.cpp,
LLM_KV_ROPE_SCALING_ORIG_CTX_LEN and LLM_KV_ROPE_SCALING_ATTN_FACTOR):
  phi3.rope.scaling.original_context_length  UINT32   256
  phi3.rope.scaling.attn_factor              FLOAT32  f32(sqrt(1 + ln(4096/256) / ln(256))) = f32(sqrt(1.5))
Added after the template's tensors (F32, 1-D, ne0 = head_dim/2 = 8; llama.cpp creates them in
src/models/phi3.cpp with {n_rot/2}):
  rope_factors_long.weight   f32(1 + 4 i)          = 1, 5, ..., 29
  rope_factors_short.weight  f32(1.0 + 0.05 i)     (computed in double, then rounded to f32)
Alignment 32 (the template has no general.alignment key), every tensor padded to it, as gguf-py does.
tests/data/phi3_longrope/README.md holds the same spec; kvaudit's test rebuilds this file byte for byte.
"""
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
N_FACTORS = 8  # phi3.rope.dimension_count (16) / 2


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


def longrope(kv, tensors):
    arch = next(v for k, _, v in kv if k == "general.architecture").decode()
    ctx = next(v for k, _, v in kv if k == arch + ".context_length")
    attn_factor = math.sqrt(1 + math.log(ctx / ORIG_CTX) / math.log(ORIG_CTX))
    kv = kv + [
        (arch + ".rope.scaling.original_context_length", UINT32, ORIG_CTX),
        (arch + ".rope.scaling.attn_factor", FLOAT32, attn_factor),  # packed '<f': nearest f32
    ]
    long_ = struct.pack("<%df" % N_FACTORS, *[1 + 4 * i for i in range(N_FACTORS)])
    short = struct.pack("<%df" % N_FACTORS, *[1.0 + 0.05 * i for i in range(N_FACTORS)])
    tensors = tensors + [
        ("rope_factors_long.weight", (N_FACTORS,), F32, long_),
        ("rope_factors_short.weight", (N_FACTORS,), F32, short),
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
    if len(sys.argv) != 3:
        sys.exit("usage: longrope_gguf.py TEMPLATE.gguf OUT.gguf")
    kv, tensors = load(sys.argv[1])
    if next(v for k, _, v in kv if k == "general.architecture") != b"phi3":
        sys.exit("%s: not a phi3 GGUF" % sys.argv[1])
    write(sys.argv[2], *longrope(kv, tensors))


if __name__ == "__main__":
    main()

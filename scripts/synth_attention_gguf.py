#!/usr/bin/env python3
"""Writes a GGUF with a real model's attention shape (layers, query heads, KV heads, head_dim,
sliding window) and everything else of a tiny template: one of the llama.cpp goldens in
../shared/golden/llamacpp (vocab 256, hidden 64, tiny FFN and experts), so the file is small and
llama.cpp loads it with the architecture's own keys and tensors. Zero weights: only the KV cache
llama.cpp allocates for it means anything (scripts/llamacpp_kv_buffers.sh). Python standard
library only (GGUF v3, docs: ggml-org/ggml docs/gguf.md).

  synth_attention_gguf.py TEMPLATE.gguf OUT.gguf --layers 24 --heads 64 --kv-heads 8 \
      --head-dim 64 [--window 128] [--context 131072]
"""
import argparse
import struct
import sys

ALIGN = 32
F32, F16 = 0, 1
SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read(f, fmt):
    return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))


def read_str(f):
    (n,) = read(f, "Q")
    return f.read(n)


def read_value(f, t):
    if t in SCALAR:
        return read(f, SCALAR[t])[0]
    if t == 8:
        return read_str(f)
    if t == 9:
        et, n = read(f, "IQ")
        return (et, [read_value(f, et) for _ in range(n)])
    raise ValueError("unknown GGUF value type %d" % t)


def write_str(out, b):
    out += struct.pack("<Q", len(b)) + b


def write_value(out, t, v):
    if t in SCALAR:
        out += struct.pack("<" + SCALAR[t], v)
    elif t == 8:
        write_str(out, v)
    else:
        et, items = v
        out += struct.pack("<IQ", et, len(items))
        for item in items:
            write_value(out, et, item)


def load_header(path):
    """(kv, tensor infos, data start) of a GGUF v3 (default alignment)."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            sys.exit("%s: not a GGUF file" % path)
        version, n_tensors, n_kv = read(f, "IQQ")
        if version != 3:
            sys.exit("%s: GGUF version %d, expected 3" % (path, version))
        kv = []  # [(key, type, value)]
        for _ in range(n_kv):
            key = read_str(f).decode()
            (t,) = read(f, "I")
            kv.append((key, t, read_value(f, t)))
        infos = []  # [(name, dims, ggml type, data offset)]
        for _ in range(n_tensors):
            name = read_str(f).decode()
            (nd,) = read(f, "I")
            dims = read(f, "Q" * nd)
            t, offset = read(f, "IQ")
            infos.append((name, dims, t, offset))
        data_start = (f.tell() + ALIGN - 1) // ALIGN * ALIGN
    return kv, infos, data_start


def load(path):
    """(kv [(key, type, value)], tensors [(name, dims)]) of a GGUF v3."""
    kv, infos, _ = load_header(path)
    return kv, [(name, dims) for name, dims, _, _ in infos]


def attention_dims(suffix, dims, a):
    """The template tensor's dims under the new attention shape (ggml order: ne0 first)."""
    q, kv = a.heads * a.head_dim, a.kv_heads * a.head_dim
    n_embd = dims[0] if suffix.endswith(".weight") and len(dims) == 2 else None
    new = {
        "attn_q.weight": (n_embd, q),
        "attn_k.weight": (n_embd, kv),
        "attn_v.weight": (n_embd, kv),
        "attn_output.weight": (q, dims[1] if len(dims) == 2 else None),
        "attn_q.bias": (q,),
        "attn_k.bias": (kv,),
        "attn_v.bias": (kv,),
        "attn_q_norm.weight": (a.head_dim,),
        "attn_k_norm.weight": (a.head_dim,),
        "attn_sinks.weight": (a.heads,),
    }
    return new.get(suffix, dims)


def plan_tensors(template, a):
    """[(name, dims, type)]: the template's global tensors, then its layer 0 for every new layer."""
    out = []
    layer0 = [(n[len("blk.0."):], d) for n, d in template if n.startswith("blk.0.")]
    for name, dims in template:
        if not name.startswith("blk."):
            out.append((name, dims))
    for il in range(a.layers):
        for suffix, dims in layer0:
            out.append(("blk.%d.%s" % (il, suffix), attention_dims(suffix, dims, a)))
    # Matrices of the attention and the embeddings in f16 (half the file); norms, biases,
    # routers and experts as the template stores them (f32).
    big = ("attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight", "token_embd.weight")
    return [(n, d, F16 if n.endswith(big) else F32) for n, d in out]


def new_kv(kv, a, arch):
    set_to = {
        arch + ".block_count": a.layers,
        arch + ".attention.head_count": a.heads,
        arch + ".attention.head_count_kv": a.kv_heads,
        arch + ".attention.key_length": a.head_dim,
        arch + ".attention.value_length": a.head_dim,
    }
    if a.window:
        set_to[arch + ".attention.sliding_window"] = a.window
    if a.context:
        set_to[arch + ".context_length"] = a.context
    out = []
    for key, t, v in kv:
        if key == "general.name":
            v = ("attention-shape-%s-%dx%dx%dx%d" % (arch, a.layers, a.heads, a.kv_heads, a.head_dim)).encode()
        out.append((key, t, set_to.pop(key, v)))
    if set_to:
        sys.exit("the template lacks the keys %s" % ", ".join(sorted(set_to)))
    return out


def gguf_head(kv, n_tensors):
    """The GGUF v3 header and every key/value pair, before the tensor infos."""
    head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, n_tensors, len(kv)))
    for key, t, v in kv:
        write_str(head, key.encode())
        head += struct.pack("<I", t)
        write_value(head, t, v)
    return head


def write(path, kv, tensors):
    head = gguf_head(kv, len(tensors))
    offset, sizes = 0, []
    for name, dims, t in tensors:
        n = 1
        for d in dims:
            n *= d
        size = n * (2 if t == F16 else 4)
        write_str(head, name.encode())
        head += struct.pack("<I", len(dims)) + struct.pack("<" + "Q" * len(dims), *dims) + struct.pack("<IQ", t, offset)
        sizes.append(size)
        offset += (size + ALIGN - 1) // ALIGN * ALIGN
    head += bytes(-len(head) % ALIGN)
    with open(path, "wb") as f:
        f.write(head)
        for size in sizes:
            f.write(bytes(size + (-size % ALIGN)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("template")
    p.add_argument("out")
    for flag in ("--layers", "--heads", "--kv-heads", "--head-dim"):
        p.add_argument(flag, type=int, required=True)
    p.add_argument("--window", type=int, default=0, help="attention.sliding_window (the template must have one)")
    p.add_argument("--context", type=int, default=0, help="context_length (default: the template's)")
    a = p.parse_args()
    kv, template = load(a.template)
    arch = next(v for k, _, v in kv if k == "general.architecture").decode()
    write(a.out, new_kv(kv, a, arch), plan_tensors(template, a))


if __name__ == "__main__":
    main()

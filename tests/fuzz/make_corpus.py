#!/usr/bin/env python3
"""Writes the fuzz seed corpus (small valid files) and tests/data/malformed (small invalid ones).

Run from anywhere: python3 tests/fuzz/make_corpus.py. Deterministic; every file < 64 KB.
Layouts: GGUF per ggml-org/ggml:docs/gguf.md (v3, little-endian), safetensors per huggingface/safetensors.
"""
import json
import os
import random
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
MALFORMED = os.path.join(ROOT, "tests", "data", "malformed")

# ggml type id -> (block elems, block bytes)
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22),
        "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144), "Q5_K": (13, 256, 176),
        "Q6_K": (14, 256, 210), "I8": (24, 1, 1), "I32": (26, 1, 4), "F64": (28, 1, 8), "BF16": (30, 1, 2)}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, type_id, payload):
    return gstr(key) + struct.pack("<I", type_id) + payload


def gguf(kvs, tensors, version=3, alignment=32, n_tensors=None, n_kv=None, magic=b"GGUF"):
    """tensors: list of (name, ne list, ggml type name, data bytes, offset or None)."""
    out = magic + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                              len(kvs) if n_kv is None else n_kv)
    out += b"".join(kvs)
    data = b""
    for name, ne, tname, blob, offset in tensors:
        data += b"\0" * (-len(data) % alignment)
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", GGML[tname][0], len(data) if offset is None else offset)
        data += blob
    if tensors:
        out += b"\0" * (-len(out) % alignment)
    return out + data


def tensor(rng, name, ne, tname):
    _, be, bb = GGML[tname]
    n = 1
    for d in ne:
        n *= d
    blob = bytearray(rng.getrandbits(8) for _ in range(n // be * bb))
    return (name, ne, tname, bytes(blob), None)


def metadata_all_types():
    kvs = [kv("general.architecture", 8, gstr("llama")), kv("u8", 0, b"\x07"), kv("i8", 1, b"\xf9"),
           kv("u16", 2, struct.pack("<H", 512)), kv("i16", 3, struct.pack("<h", -3)),
           kv("llama.context_length", 4, struct.pack("<I", 4096)), kv("i32", 5, struct.pack("<i", -9)),
           kv("eps", 6, struct.pack("<f", 1e-5)), kv("flag", 7, b"\x01"),
           kv("u64", 10, struct.pack("<Q", 1 << 40)), kv("i64", 11, struct.pack("<q", -1)),
           kv("f64", 12, struct.pack("<d", 0.25))]
    toks = [b"<s>", b"a", b"\xe2\x96\x81b", b""]
    kvs.append(kv("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, len(toks)) + b"".join(gstr(t) for t in toks)))
    kvs.append(kv("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 4) + struct.pack("<4f", 0, -1, -2, -3)))
    kvs.append(kv("tokenizer.ggml.token_type", 9, struct.pack("<IQ", 5, 4) + struct.pack("<4i", 3, 1, 1, 1)))
    return kvs


def st(header, data, header_len=None):
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(h) if header_len is None else header_len) + h + data


def st_entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def write(folder, name, blob):
    assert len(blob) < 64 * 1024, name
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(blob)


def main():
    rng = random.Random(1234)
    g = os.path.join(CORPUS, "gguf")
    every_type = [tensor(rng, "t." + t.lower(), [256, 2] if GGML[t][1] == 256 else [64, 2], t) for t in GGML]
    write(g, "all_types.gguf", gguf(metadata_all_types(), every_type))
    write(g, "llama_like.gguf", gguf(metadata_all_types()[:3], [
        tensor(rng, "token_embd.weight", [32, 16], "Q8_0"), tensor(rng, "blk.0.attn_norm.weight", [32], "F32"),
        tensor(rng, "blk.0.ffn_down.weight", [256, 4], "Q6_K"), tensor(rng, "output_norm.weight", [32], "F32")]))
    write(g, "v2_align64.gguf", gguf([kv("general.alignment", 4, struct.pack("<I", 64))],
                                     [tensor(rng, "a", [8], "F16"), tensor(rng, "b", [32, 3], "Q4_0")],
                                     version=2, alignment=64))
    write(g, "vocab_only.gguf", gguf(metadata_all_types(), []))
    write(g, "empty_header.gguf", gguf([], []))
    write(g, "scalar_and_zero.gguf", gguf([], [("s", [], "F32", b"\0\0\x80\x3f", None), ("z", [0, 4], "F16", b"", None)]))

    s = os.path.join(CORPUS, "safetensors")
    write(s, "two_tensors.safetensors", st({"__metadata__": {"format": "pt"}, "a": st_entry("F32", [2, 3], 0, 24),
                                            "b": st_entry("BF16", [4], 24, 32)}, bytes(range(32))))
    header, data = {}, b""
    for dt, size in [("F32", 4), ("F16", 2), ("BF16", 2), ("F64", 8), ("I8", 1), ("I16", 2), ("I32", 4),
                     ("I64", 8), ("U8", 1), ("BOOL", 1)]:
        header[dt.lower()] = st_entry(dt, [3, 2], len(data), len(data) + 6 * size)
        data += bytes(rng.getrandbits(8) for _ in range(6 * size))
    write(s, "all_dtypes.safetensors", st(header, data))
    write(s, "empty.safetensors", st({}, b""))
    write(s, "zero_size.safetensors", st({"z": st_entry("F16", [0, 5], 0, 0), "s": st_entry("F32", [], 0, 4)}, b"\0" * 4))
    write(s, "padded_header.safetensors", st(json.dumps({"x": st_entry("F32", [1], 0, 4)}).encode() + b"      ", b"\0" * 4))

    m = MALFORMED
    good = gguf(metadata_all_types()[:2], [tensor(rng, "w", [32, 2], "Q8_0")])
    write(m, "gguf_truncated_data.gguf", good[:-5])
    write(m, "gguf_truncated_header.gguf", good[:10])
    write(m, "gguf_v1.gguf", gguf([], [], version=1))
    write(m, "gguf_big_endian.gguf", b"GGUF" + struct.pack(">IQQ", 3, 0, 0))
    write(m, "gguf_huge_key_len.gguf", b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 1 << 62) + b"key" * 8)
    write(m, "gguf_huge_array.gguf", gguf([kv("arr", 9, struct.pack("<IQ", 8, 1 << 61))], []))
    write(m, "gguf_huge_counts.gguf", gguf([], [], n_tensors=1 << 63, n_kv=1 << 63))
    write(m, "gguf_nested_array.gguf", gguf([kv("arr", 9, struct.pack("<IQ", 9, 1) + struct.pack("<IQ", 0, 0))], []))
    write(m, "gguf_bad_alignment.gguf", gguf([kv("general.alignment", 4, struct.pack("<I", 3))], []))
    write(m, "gguf_five_dims.gguf", gguf([], [("t", [1, 1, 1, 1, 1], "F32", b"\0" * 4, None)]))
    write(m, "gguf_overlap.gguf", gguf([], [("a", [64], "F32", b"\0" * 256, None), ("b", [32], "F32", b"\0" * 128, 64)]))
    write(m, "gguf_offset_beyond.gguf", gguf([], [("a", [8], "F32", b"\0" * 32, 1 << 63)]))
    write(m, "gguf_misaligned.gguf", gguf([], [("a", [8], "F32", b"\0" * 64, 4)]))
    write(m, "gguf_row_not_block.gguf", gguf([], [("a", [384], "Q4_K", b"\0" * 216, None)]))
    write(m, "gguf_dup_tensor.gguf", gguf([], [("a", [8], "F32", b"\0" * 32, None), ("a", [8], "F32", b"\0" * 32, None)]))
    bad_type = bytearray(gguf([], [("a", [8], "F32", b"\0" * 32, None)]))
    struct.pack_into("<I", bad_type, 24 + 9 + 4 + 8, 16)  # ggml type id 16 (IQ2_XXS)
    write(m, "gguf_unknown_type.gguf", bytes(bad_type))
    write(m, "empty_file.bin", b"")
    write(m, "st_len_beyond.safetensors", st({}, b"", header_len=1 << 40))
    write(m, "st_not_json.safetensors", st(b'{"a": {"dtype": ', b""))
    write(m, "st_not_object.safetensors", st(b"[1,2]", b""))
    write(m, "st_bad_dtype.safetensors", st({"a": st_entry("F8_E5M2", [1], 0, 1)}, b"\0"))
    write(m, "st_negative_shape.safetensors", st({"a": st_entry("F32", [-1], 0, 4)}, b"\0" * 4))
    write(m, "st_offsets_beyond.safetensors", st({"a": st_entry("F32", [4], 0, 16)}, b"\0" * 4))
    write(m, "st_size_mismatch.safetensors", st({"a": st_entry("F32", [3], 0, 8)}, b"\0" * 8))
    write(m, "st_overlap.safetensors", st({"a": st_entry("F32", [2], 0, 8), "b": st_entry("F32", [2], 4, 12)}, b"\0" * 12))
    write(m, "st_bad_metadata.safetensors", st({"__metadata__": {"k": [1]}}, b""))
    write(m, "st_deep_nesting.safetensors", st(b"[" * 20000 + b"]" * 20000, b""))


if __name__ == "__main__":
    main()

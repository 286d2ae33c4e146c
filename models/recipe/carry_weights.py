#!/usr/bin/env python3
"""Pack a model folder's bf16 safetensors shards small enough to carry to the accelerator
machine between training stages, and unpack them there byte for byte (stdlib only).

  python3 carry_weights.py pack DIR FILE      # DIR: shards + json files
  python3 carry_weights.py unpack FILE DIR

The high byte of a bf16 value (sign, exponent, top mantissa bit) is very regular and
compresses about 3x with LZMA; the low byte is noise and is stored as it is: a 37 MB
folder packs to about 25 MB."""
import json
import lzma
import os
import struct
import sys


def pack(src, dst, keep=16):
    """keep: bits of each bf16 value kept (16: exact; fewer rounds the mantissa to nearest,
    for a carry limit smaller than the folder: the next stage trains on from close weights)."""
    keep = int(keep)
    files, hi, lo, others = [], bytearray(), bytearray(), {}
    for fn in sorted(os.listdir(src)):
        path = os.path.join(src, fn)
        if fn.endswith(".safetensors"):
            b = open(path, "rb").read()
            n = struct.unpack("<Q", b[:8])[0]
            data = b[8 + n:]
            if len(data) % 2:
                sys.exit("odd data length in " + fn)
            files.append({"name": fn, "head": b[:8 + n].decode("latin-1"), "data": len(data)})
            if keep < 16:
                # round the low byte to its top keep - 8 bits (one table lookup per byte;
                # a value that would carry into the high byte is cut instead)
                step = 1 << (16 - keep)
                cut = bytes(min((b + step // 2) // step * step, 256 - step) for b in range(256))
                lo_b = bytes(data[0::2]).translate(cut)
                data = bytearray(data)
                data[0::2] = lo_b
            lo += data[0::2]
            hi += data[1::2]
        elif fn.endswith(".json") and not fn.startswith("tokenizer"):
            others[fn] = open(path, encoding="utf-8").read()
    chi = lzma.compress(bytes(hi), preset=6 if keep == 16 else 1)
    if keep < 16:
        lo = lzma.compress(bytes(lo), preset=1)
    meta = json.dumps({"files": files, "others": others, "hi": len(chi), "lo": len(lo),
                       "lo_lzma": keep < 16}).encode()
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(meta)) + meta + chi + bytes(lo))
    print("packed %d shards, %d bytes -> %d" % (len(files), sum(x["data"] for x in files), os.path.getsize(dst)))


def unpack(src, dst):
    b = open(src, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    meta = json.loads(b[8:8 + n])
    p = 8 + n
    hi = lzma.decompress(b[p:p + meta["hi"]])
    lo = b[p + meta["hi"]:p + meta["hi"] + meta["lo"]]
    if meta.get("lo_lzma"):
        lo = lzma.decompress(lo)
    os.makedirs(dst, exist_ok=True)
    off = 0
    for f in meta["files"]:
        k = f["data"] // 2
        data = bytearray(f["data"])
        data[0::2] = lo[off:off + k]
        data[1::2] = hi[off:off + k]
        off += k
        with open(os.path.join(dst, f["name"]), "wb") as out:
            out.write(f["head"].encode("latin-1") + bytes(data))
    for fn, text in meta["others"].items():
        with open(os.path.join(dst, fn), "w", encoding="utf-8") as out:
            out.write(text)
    print("unpacked %d shards into %s" % (len(meta["files"]), dst))


if __name__ == "__main__":
    {"pack": pack, "unpack": unpack}[sys.argv[1]](*sys.argv[2:])

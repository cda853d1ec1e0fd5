#!/usr/bin/python3
"""Writes the fuzz target's seed corpus (fuzz/corpus/, committed): the .npy files NumPy
wrote for tests/cli/numpy_fixtures.hpp (every format version, dtype and malformation the
reader knows), and arrays shaped like each command's inputs, written here by the format's
rules (a cache, slots, index keys, header-only arrays with huge extents). Files have no
.npy suffix: the repository ignores *.npy.

Run from the repository root, only to change the corpus:  python3 fuzz/make_seeds.py
"""
import os
import re
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")


def npy(descr, shape, data=b"", version=1):
    """A .npy file as NumPy writes it: the dict padded with spaces to 64 bytes, '\\n'."""
    shape_text = "(" + ", ".join(str(e) for e in shape) + ("," if len(shape) == 1 else "") + ")"
    text = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    prefix = 10 if version == 1 else 12
    pad = (64 - (prefix + len(text) + 1) % 64) % 64
    text = (text + " " * pad + "\n").encode()
    length = struct.pack("<H", len(text)) if version == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + length + text + data


def fixtures():
    """name -> bytes of every fixture in numpy_fixtures.hpp."""
    text = open(os.path.join(ROOT, "tests", "cli", "numpy_fixtures.hpp")).read()
    found = {}
    for m in re.finditer(r"inline const std::string (\w+)\(\s*((?:\"[^\"]*\"\s*)+), (\d+)\);", text):
        body = "".join(re.findall(r"\"([^\"]*)\"", m.group(2)))
        data = bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-f]{2})", body))
        assert len(data) == int(m.group(3)), m.group(1)
        found[m.group(1)] = data
    return found


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {"numpy_" + k: v for k, v in fixtures().items()}
    seeds.update({
        "cache_u8_2x16x1x272": npy("|u1", (2, 16, 1, 272), bytes(range(256)) * 34),
        "index_cache_u8_1x9216": npy("|u1", (1, 9216), bytes(9216)),
        "slots_i64_5": npy("<i8", (5,), struct.pack("<5q", 0, 17, -1, 2**40, 31)),
        "seq_lens_i32_3": npy("<i4", (3,), struct.pack("<3i", 300, 0, -5)),
        "keys_f32_2x128": npy("<f4", (2, 128), struct.pack("<256f", *[(i % 17) - 8.5 for i in range(256)])),
        "q_bf16_u16_1x1x256_v2": npy("<u2", (1, 1, 256), struct.pack("<256H", *[0x3F80 + i for i in range(256)]), 2),
        "q_e4m3_u8_empty_0x4x128": npy("|u1", (0, 4, 128)),
        "cache_header_only_huge_heads": npy("|u1", (0, 16, 576460752303423488, 272)),
        "scores_header_only_huge_rows": npy("<f4", (1, 2147483647, 0)),
        "k_header_only_f32_0x1024x256": npy("<f4", (0, 1024, 256)),
        "truncated_data_i64": npy("<i8", (4,), struct.pack("<3q", 1, 2, 3)),
    })
    for name, data in sorted(seeds.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(seeds), OUT))


if __name__ == "__main__":
    main()

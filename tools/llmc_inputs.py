"""Writes the files llm.c's train_gpt2_fp32.cu reads, with random contents, so that it can be
timed on a machine that cannot download GPT-2's weights or a tokenised dataset:

- gpt2_124M.bin: a 256-int header (magic 20240326, version 3 for fp32, max context, vocab,
  layers, heads, channels, padded vocab), then every parameter as float32 in llm.c's order;
- TRAIN and VAL token files: a 256-int header (magic 20240520, version 1, token count), then
  the tokens as uint16.

Weights are drawn as GPT-2 initialises them (normal, std 0.02; LayerNorm weights 1, biases 0):
the values do not change the time of a step, only that nothing overflows.

Usage: python3 tools/llmc_inputs.py DIR [--steps N]   (writes DIR/gpt2_124M.bin, DIR/train.bin,
DIR/val.bin; the train file holds N batches of 4 x 1024 tokens)
"""
import argparse
import pathlib

import numpy as np

MAX_T, VOCAB, LAYERS, HEADS, C = 1024, 50257, 12, 12, 768
PADDED_VOCAB = 50304  # the vocab rounded up to a multiple of 128, as llm.c pads it
B, T = 4, 1024


def parameter_shapes():
    """(size, kind) in llm.c's order (fill_in_parameter_sizes); kind says how to draw it."""
    L = LAYERS
    return [
        (PADDED_VOCAB * C, "normal"),  # wte
        (MAX_T * C, "normal"),  # wpe
        (L * C, "one"), (L * C, "zero"),  # ln1 weight, bias
        (L * 3 * C * C, "normal"), (L * 3 * C, "zero"),  # qkv
        (L * C * C, "normal"), (L * C, "zero"),  # attention projection
        (L * C, "one"), (L * C, "zero"),  # ln2
        (L * 4 * C * C, "normal"), (L * 4 * C, "zero"),  # fc
        (L * C * 4 * C, "normal"), (L * C, "zero"),  # fc projection
        (C, "one"), (C, "zero"),  # final LayerNorm
    ]


def write_model(path, rng):
    header = np.zeros(256, dtype=np.int32)
    header[:8] = [20240326, 3, MAX_T, VOCAB, LAYERS, HEADS, C, PADDED_VOCAB]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for size, kind in parameter_shapes():
            if kind == "normal":
                values = rng.standard_normal(size, dtype=np.float32) * np.float32(0.02)
            else:
                values = np.full(size, 1.0 if kind == "one" else 0.0, dtype=np.float32)
            f.write(values.tobytes())


def write_tokens(path, count, rng):
    header = np.zeros(256, dtype=np.int32)
    header[:3] = [20240520, 1, count]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(rng.integers(0, VOCAB, count, dtype=np.uint16).tobytes())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=pathlib.Path)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    write_model(args.dir / "gpt2_124M.bin", rng)
    # llm.c takes B*T + 1 tokens per batch and trains one pass over the file.
    write_tokens(args.dir / "train.bin", args.steps * B * T + 1, rng)
    write_tokens(args.dir / "val.bin", B * T + 1, rng)


if __name__ == "__main__":
    main()

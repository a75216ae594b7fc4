"""Writes a UTF-8 text (or a gzip of one) as GPT-2's token ids, little-endian u16, with OpenAI's
tiktoken (r50k_base; its ranks from RANKS_FILE where given, as tools/gpt2_tokens_golden.py
reads them): the input of tools/gpt2_brief_pretrain.py.

Usage: python3 tools/gpt2_tokens.py TEXT[.gz] OUT.u16 [RANKS_FILE]
"""
import array
import gzip
import sys

from gpt2_tokens_golden import encoding


def main():
    path, out = sys.argv[1:3]
    enc = encoding(sys.argv[3] if len(sys.argv) > 3 else None)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read()
    tokens = enc.encode(text, allowed_special={"<|endoftext|>"})
    ids = array.array("H", tokens)
    if sys.byteorder != "little":
        ids.byteswap()
    with open(out, "wb") as f:
        ids.tofile(f)
    print(f"{len(text)} characters, {len(tokens)} tokens")


if __name__ == "__main__":
    main()

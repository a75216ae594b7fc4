"""Writes tests/data/gpt2_tokens.json: GPT-2's tokens (r50k_base) of a set of strings, as
OpenAI's tiktoken encodes them, for tests/gpt2.rs to check ours against.

tiktoken fetches its ranks file from the network on first use; on a machine without it, pass
the file (tiktoken-rs ships the same one: ~/.cargo/registry/src/*/tiktoken-rs-*/assets/
r50k_base.tiktoken). Usage: python3 tools/gpt2_tokens_golden.py [RANKS_FILE]
"""
import hashlib
import json
import sys

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from tiktoken_ext.openai_public import r50k_pat_str

STRINGS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces, and trailing   ",
    "newlines\n\nand\ttabs\r\n",
    "numbers 1234567890 3.14159 -42",
    "it's they're we'll I'd you've she'd'nt",
    "Ünïcödé: café, naïve, Straße, 東京, Ελληνικά, русский",
    "emoji 🙂🚀👩‍💻 and symbols ∑∫√≠",
    "code: fn main() { println!(\"{x:?}\"); } // comment",
    "<|endoftext|>after the end",
    "ROMEO:\nBut, soft! what light through yonder window breaks?",
    "",
]


# The ranks file's SHA-256, as tiktoken checks it when it downloads it.
RANKS_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"


def encoding(ranks_file):
    """tiktoken's r50k_base, its ranks read from `ranks_file` where one is given."""
    if ranks_file is None:
        return tiktoken.get_encoding("r50k_base")
    with open(ranks_file, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != RANKS_SHA256:
        sys.exit(f"{ranks_file} is not r50k_base's ranks (sha256 {digest})")
    return tiktoken.Encoding(
        name="r50k_base",
        pat_str=r50k_pat_str,
        mergeable_ranks=load_tiktoken_bpe(ranks_file),
        special_tokens={"<|endoftext|>": 50256},
        explicit_n_vocab=50257,
    )


def main():
    enc = encoding(sys.argv[1] if len(sys.argv) > 1 else None)
    cases = [{"text": s, "tokens": enc.encode(s, allowed_special="all")} for s in STRINGS]
    out = {"tiktoken": tiktoken.__version__, "encoding": "r50k_base", "cases": cases}
    with open("tests/data/gpt2_tokens.json", "w", encoding="utf-8") as f:
        # A case a line.
        head = json.dumps({k: v for k, v in out.items() if k != "cases"}, ensure_ascii=False)
        lines = ",\n  ".join(json.dumps(c, ensure_ascii=False) for c in cases)
        f.write(head[:-1] + ', "cases": [\n  ' + lines + "\n]}\n")


if __name__ == "__main__":
    main()

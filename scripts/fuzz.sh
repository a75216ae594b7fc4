#!/usr/bin/env bash
# Fuzzes the checkpoint and text loaders (examples/fuzz.rs) for SECONDS, half each (default
# 600), from SEED (default 1), then refreshes the corpus that the tests replay
# (tests/fuzz/corpus/) with the inputs it kept. Exits 1 on a crash or a hang, which it leaves
# in target/fuzz/crashes/. The same seed gives the same inputs, as many as the time allows.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
seed=${2:-1}
out=target/fuzz
rm -rf "$out"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
cargo run --release --locked --example fuzz -- "$seconds" "$seed" "$out"
rm -rf tests/fuzz/corpus
mkdir -p tests/fuzz/corpus
cp -r "$out/checkpoint" "$out/text" tests/fuzz/corpus/
echo "corpus refreshed: $(ls tests/fuzz/corpus/checkpoint | wc -l) checkpoints, $(ls tests/fuzz/corpus/text | wc -l) texts"

#!/usr/bin/env bash
# GPT-2 124M fine-tuned with LoRA (rank 8, batch 8 × 256 tokens) by webgrad natively and by
# PyTorch + PEFT on the same GPU, in one call; then the files webgrad wrote checked in PEFT and
# transformers (tools/gpt2_lora_check.py). The model is random, made by transformers
# (tools/torch_gpt2_lora_ref.py --save). Run on the GPU machine from the repository root with
# the release binary built: OUT=/some/dir bash scripts/gpt2_lora_bench.sh [WEBGRAD_BINARY]
set -euo pipefail
out=${OUT:-/tmp/gpt2-lora}
bin=${1:-target/release/webgrad}
work=$(mktemp -d)
mkdir -p "$out" "$work/adapters" "$work/merged"
python3 tools/torch_gpt2_lora_ref.py --save "$work/base" | tee "$out/torch.jsonl"
# 300 steps, their rate measured over the last 100 (the first hundred include the product
# shapes' timing and the kernels' compilation); the built-in Shakespeare as GPT-2's tokens.
"$bin" train --task text --load "$work/base/model.safetensors" --lora-rank 8 --steps 300 \
  --eval-every 100 --save-adapters "$work/adapters/adapter_model.safetensors" \
  --save-merged "$work/merged/model.safetensors" > "$out/webgrad.jsonl" 2> "$out/webgrad.err"
cat "$out/webgrad.jsonl"
python3 tools/gpt2_lora_check.py "$work/base" "$work/adapters" "$work/merged" | tee "$out/check.json"
"$bin" sample --load "$work/merged/model.safetensors" --prompt "ROMEO:" --tokens 60 --seed 1 \
  > "$out/sample.txt" 2>> "$out/webgrad.err"
rm -rf "$work"

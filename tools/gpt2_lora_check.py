"""Checks what `webgrad train --load BASE/model.safetensors --lora-rank R --save-adapters
ADAPTERS/adapter_model.safetensors --save-merged MERGED/model.safetensors` wrote, in PyTorch:
the adapters load with PEFT's PeftModel.from_pretrained on top of transformers' GPT-2 (BASE),
the merged model with GPT2LMHeadModel.from_pretrained (MERGED), and the two give the same
logits; and the adapters changed the base's. Prints one JSON line; exits 1 when they differ.

Usage: python3 tools/gpt2_lora_check.py BASE ADAPTERS MERGED
"""
import json
import sys

import peft
import torch
from transformers import GPT2LMHeadModel


def main():
    base_dir, adapters_dir, merged_dir = sys.argv[1:4]
    torch.backends.cuda.matmul.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tokens = torch.tensor([[(i * 7919 + 13) % 50257 for i in range(64)]], device=device)
    with torch.no_grad():
        base = GPT2LMHeadModel.from_pretrained(base_dir).to(device).eval()
        before = base(tokens).logits.float()
        adapted = peft.PeftModel.from_pretrained(base, adapters_dir).to(device).eval()
        with_peft = adapted(input_ids=tokens).logits.float()
        merged = GPT2LMHeadModel.from_pretrained(merged_dir).to(device).eval()
        with_merged = merged(tokens).logits.float()
    size = with_peft.abs().max().item()
    diff = (with_peft - with_merged).abs().max().item() / size
    moved = (with_peft - before).abs().max().item() / size
    print(json.dumps({
        "peft_vs_merged_max_relative": diff, "adapters_moved_logits_relative": moved,
        "lora_modules": sum(1 for n, _ in adapted.named_modules() if n.endswith("lora_A")),
        "peft": peft.__version__,
    }))
    sys.exit(0 if diff < 1e-4 and moved > 1e-3 else 1)


if __name__ == "__main__":
    main()

"""Writes tests/data/gpt2_tiny_lora/: LoRA adapters made by PyTorch's PEFT on the tiny GPT-2 of
tests/data/gpt2_tiny (rank 4, alpha 8, on c_attn, c_proj and c_fc, their B drawn at random so
that they change the model), saved as PEFT saves them (adapter_model.safetensors,
adapter_config.json); the model with them merged as transformers saves it (merged/); and
golden.json: the adapted model's fp32 logits for the two sequences of tests/data/gpt2_tiny.
tests/gpt2_lora.rs loads both here and checks the logits. Run where transformers, PEFT and
PyTorch are: python3 tools/gpt2_peft_golden.py
"""
import json
import os

import peft
import torch
from transformers import GPT2LMHeadModel

BASE = "tests/data/gpt2_tiny"
OUT = "tests/data/gpt2_tiny_lora"


def main():
    torch.manual_seed(1)
    model = GPT2LMHeadModel.from_pretrained(BASE).eval()
    config = peft.LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, fan_in_fan_out=True,
        target_modules=["c_attn", "c_proj", "c_fc"], init_lora_weights=False,
    )
    adapted = peft.get_peft_model(model, config).eval()
    os.makedirs(OUT, exist_ok=True)
    adapted.save_pretrained(OUT, safe_serialization=True)
    with open(os.path.join(BASE, "golden.json")) as f:
        tokens = json.load(f)["tokens"]
    with torch.no_grad():
        logits = adapted(input_ids=torch.tensor(tokens)).logits.float()
        merged = adapted.merge_and_unload()
        merged.save_pretrained(os.path.join(OUT, "merged"), safe_serialization=True)
        again = merged(torch.tensor(tokens)).logits.float()
    golden = {
        "peft": peft.__version__,
        "torch": torch.__version__,
        "tokens": tokens,
        "merged_vs_adapted_max": (logits - again).abs().max().item(),
        "logits": [[[round(v, 7) for v in row] for row in seq] for seq in logits.tolist()],
    }
    with open(os.path.join(OUT, "golden.json"), "w") as f:
        json.dump(golden, f)
    print(sorted(os.listdir(OUT)), golden["merged_vs_adapted_max"])


if __name__ == "__main__":
    main()

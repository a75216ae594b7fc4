"""Writes tests/data/gpt2_tiny/: a tiny GPT-2 made by Hugging Face's transformers (2 blocks,
width 32 in 4 heads, a vocabulary of 96, a context of 32; random weights, seed 0, its norms'
and biases' values moved off 1 and 0 so that a mix-up shows) saved as transformers saves it
(model.safetensors, config.json), and golden.json: its fp32 logits for two sequences of
tokens, for tests/gpt2.rs to check ours against. Run where transformers and PyTorch are:
python3 tools/gpt2_golden.py
"""
import json
import os

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

OUT = "tests/data/gpt2_tiny"


def main():
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=96, n_positions=32, n_embd=32, n_layer=2, n_head=4,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
    )
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".ln_" in name or name.startswith("transformer.ln_f") or name.endswith(".bias"):
                p.add_(0.1 * torch.randn_like(p))
    os.makedirs(OUT, exist_ok=True)
    model.save_pretrained(OUT, safe_serialization=True)
    tokens = [[(i * 37 + 5) % 96 for i in range(20)], [(i * i + 3) % 96 for i in range(20)]]
    with torch.no_grad():
        logits = model(torch.tensor(tokens)).logits.float()
    golden = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "tokens": tokens,
        "logits": [[[round(v, 7) for v in row] for row in seq] for seq in logits.tolist()],
    }
    with open(os.path.join(OUT, "golden.json"), "w") as f:
        json.dump(golden, f)
    print(sorted(n for n, _ in model.state_dict().items())[:6], logits.shape)


if __name__ == "__main__":
    main()

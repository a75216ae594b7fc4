"""Trains a small GPT-2 (transformers' GPT2LMHeadModel: 4 blocks of width 384, 6 heads, 256
positions, GPT-2's 50,257 tokens) from scratch on a text for a few minutes of a GPU, and saves
it as Hugging Face saves GPT-2 (model.safetensors, config.json): a pretrained GPT-2 in miniature
whose samples show what LoRA fine-tuning with webgrad changes (random weights cannot).
The text comes as GPT-2's token ids (little-endian u16, as tools/gpt2_tokens.py writes them).

Usage: python3 tools/gpt2_brief_pretrain.py TOKENS.u16 OUT_DIR [--steps N]
"""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    args = argparse.ArgumentParser()
    args.add_argument("tokens")
    args.add_argument("out")
    args.add_argument("--steps", type=int, default=2000)
    a = args.parse_args()
    torch.manual_seed(0)
    data = torch.from_numpy(np.fromfile(a.tokens, dtype="<u2").astype(np.int64))
    config = GPT2Config(n_positions=256, n_embd=384, n_layer=4, n_head=6,
                        resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1)
    model = GPT2LMHeadModel(config).cuda().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=a.steps, pct_start=0.05)
    batch, window = 32, 256
    start = time.time()
    for step in range(a.steps):
        at = torch.randint(0, len(data) - window - 1, (batch,))
        x = torch.stack([data[i:i + window] for i in at]).cuda()
        y = torch.stack([data[i + 1:i + window + 1] for i in at]).cuda()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if step % 500 == 0 or step == a.steps - 1:
            print(f"step {step} loss {loss.item():.3f} ({time.time() - start:.0f} s)", flush=True)
    model.eval().save_pretrained(a.out, safe_serialization=True)


if __name__ == "__main__":
    main()

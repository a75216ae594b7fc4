#!/usr/bin/env python3
"""The PyTorch twin of `webgrad train --task text --preset nanochar`: the same model
(tools/torch_models.py, with dropout), initialisation, data, split and recipe, so that the
validation losses of the two can be compared step for step (docs/TRAINING.md).

Recipe (src/train/config.rs, text_gpt): AdamW lr 1e-3, betas (0.9, 0.99), weight decay 0.1 on
parameters of two or more dimensions only, gradient clipping at norm 1, 100 warm-up steps then
cosine to a tenth at the last step, batch 64, context 256, dropout 0.2. Data: the built-in
text, validation every tenth block of 20,000 characters (src/data/text.rs).

Validation: the mean loss over VAL_WINDOWS fixed random windows of the validation split, in
evaluation mode; more windows than webgrad's 64, so that this reference is the less noisy one.

Usage: python3 tools/torch_train_text.py [--steps 3000] [--eval-every 250] [--seed 0]
Prints one JSON line per evaluation, as the CLI does.
"""

import argparse
import gzip
import json
import math
import pathlib
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from torch_models import GPT  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
VAL_BLOCK = 20_000
VAL_WINDOWS = 512
CONTEXT, LAYERS, HEADS, WIDTH, DROPOUT, BATCH = 256, 6, 6, 384, 0.2, 64
LR, MIN_RATIO, WARMUP, DECAY, CLIP = 1e-3, 0.1, 100, 0.1, 1.0


def load_text():
    text = gzip.decompress((ROOT / "web" / "data" / "shakespeare.txt.gz").read_bytes()).decode()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    tokens = torch.tensor([index[c] for c in text], dtype=torch.long)
    blocks = tokens.split(VAL_BLOCK)
    train = torch.cat([b for i, b in enumerate(blocks) if i % 10 != 9])
    val = torch.cat([b for i, b in enumerate(blocks) if i % 10 == 9])
    return len(chars), train, val


def init_like_webgrad(model):
    """src/nn: weights N(0, 0.02), the projections into the residual stream N(0, 0.02 /
    sqrt(2 layers)), biases 0, LayerNorm 1 and 0, embeddings N(0, 0.02)."""
    residual_std = 0.02 / math.sqrt(2 * LAYERS)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("ln") or ".ln" in name:
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith("bias"):
                p.zero_()
            elif name.endswith("attn.proj.weight") or name.endswith("mlp.proj.weight"):
                p.normal_(0.0, residual_std)
            else:
                p.normal_(0.0, 0.02)


def windows(tokens, n, generator, device):
    starts = torch.randint(0, len(tokens) - CONTEXT - 1, (n,), generator=generator)
    x = torch.stack([tokens[s:s + CONTEXT] for s in starts]).to(device)
    y = torch.stack([tokens[s + 1:s + CONTEXT + 1] for s in starts]).to(device)
    return x, y


def lr_at(step, total):
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    t = min((step - WARMUP) / max(total - WARMUP, 1), 1.0)
    return LR * (MIN_RATIO + (1 - MIN_RATIO) * 0.5 * (1 + math.cos(math.pi * t)))


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--steps", type=int, default=3000)
    args.add_argument("--eval-every", type=int, default=250)
    args.add_argument("--seed", type=int, default=0)
    a = args.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(a.seed)
    vocab, train, val = load_text()
    model = GPT(vocab, CONTEXT, LAYERS, HEADS, WIDTH, DROPOUT).to(device)
    init_like_webgrad(model)
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": DECAY},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.99), eps=1e-8)
    val_x, val_y = windows(val, VAL_WINDOWS, torch.Generator().manual_seed(12345), device)
    batches = torch.Generator().manual_seed(a.seed)
    start, mark = time.time(), time.time()
    for step in range(a.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, a.steps)
        x, y = windows(train, BATCH, batches, device)
        loss = F.cross_entropy(model(x), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        opt.step()
        done = step + 1
        if done % a.eval_every == 0 or done == a.steps:
            model.eval()
            with torch.no_grad():
                val_loss = sum(
                    F.cross_entropy(model(val_x[i:i + 64]), val_y[i:i + 64].reshape(-1)).item()
                    for i in range(0, VAL_WINDOWS, 64)
                ) / (VAL_WINDOWS // 64)
            model.train()
            rate = a.eval_every / (time.time() - mark)
            mark = time.time()
            print(json.dumps({"step": done, "train_loss": round(loss.item(), 4),
                              "val_loss": round(val_loss, 4), "steps_per_s": round(rate, 2)}), flush=True)
    print(f"{time.time() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()

"""PyTorch's time for the gpt2_124m_b4 workload (GPT-2 124M: vocab 50257, context 1024, 12 layers,
12 heads, width 768; batch 4), the twin of `webgrad bench --only gpt2`: the model of
torch_models.py, AdamW lr 1e-3 without weight decay, random tokens, fp32 with TF32 off, the
median of timed steps after warm-up, each waited for. Prints torch_ref.py's line format; with
--compiled also the torch.compile + fused AdamW line (suffix _compiled).

Usage: python3 tools/torch_gpt2_ref.py [--compiled] [--reps N]
"""
import argparse
import json
import pathlib
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from torch_models import GPT  # noqa: E402

VOCAB, CONTEXT, LAYERS, HEADS, WIDTH, BATCH = 50257, 1024, 12, 12, 768, 4


def median_step_s(step, reps, warm=5):
    for _ in range(warm):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(compiled, reps):
    torch.manual_seed(0)
    model = GPT(VOCAB, CONTEXT, LAYERS, HEADS, WIDTH).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0, fused=compiled or None)
    forward = torch.compile(model) if compiled else model
    x = torch.randint(0, VOCAB, (BATCH, CONTEXT), device="cuda")
    y = torch.randint(0, VOCAB, (BATCH * CONTEXT,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(forward(x), y).backward()
        opt.step()

    seconds = median_step_s(step, reps)
    params = sum(p.numel() for p in model.parameters())
    return {"ms": round(seconds * 1e3, 3), "tokens_per_s": round(BATCH * CONTEXT / seconds, 1),
            "params": params}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compiled", action="store_true")
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__, flush=True)
    print("gpt2_124m_b4", json.dumps(bench(False, args.reps)), flush=True)
    if args.compiled:
        print("gpt2_124m_b4_compiled", json.dumps(bench(True, args.reps)), flush=True)


if __name__ == "__main__":
    main()

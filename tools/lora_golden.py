"""Golden values for webgrad's LoRA linear layer (Tensor::lora_linear), from PyTorch in float64:
the math of PEFT's lora.Linear (result = base(x) + lora_B(lora_A(x)) * scaling, scaling =
alpha / r, no adapter dropout), with the base weight and bias frozen. For fixed random x, W,
b, A, B and an upstream gradient G, writes y and the gradients of x, A and B (none for W and
b) to tests/golden/lora.json, read by tests/ops_linear_algebra.rs.

Usage: python3 tools/lora_golden.py [OUT.json]
"""
import json
import sys

import torch

N, IN, OUT, RANK, ALPHA = 6, 10, 7, 3, 6.0


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/lora.json"
    g = torch.Generator().manual_seed(0)
    rand = lambda *shape: (torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1)
    x, w, b = rand(N, IN).requires_grad_(), rand(OUT, IN), rand(OUT)
    a, bb = rand(RANK, IN).requires_grad_(), rand(OUT, RANK).requires_grad_()
    upstream = rand(N, OUT)
    scaling = ALPHA / RANK
    base = torch.nn.functional.linear(x, w, b)
    y = base + torch.nn.functional.linear(torch.nn.functional.linear(x, a), bb) * scaling
    (y * upstream).sum().backward()
    flat = lambda t: t.detach().flatten().tolist()
    golden = {
        "sizes": {"n": N, "in": IN, "out": OUT, "rank": RANK, "alpha": ALPHA},
        "x": flat(x), "weight": flat(w), "bias": flat(b), "lora_A": flat(a), "lora_B": flat(bb),
        "upstream": flat(upstream), "y": flat(y),
        "grad_x": flat(x.grad), "grad_lora_A": flat(a.grad), "grad_lora_B": flat(bb.grad),
        "torch": torch.__version__,
    }
    with open(out, "w") as f:
        json.dump(golden, f)


if __name__ == "__main__":
    main()

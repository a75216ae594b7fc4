"""PyTorch's side of webgrad's norm_* bench lines: torch.nn.RMSNorm and torch.nn.LayerNorm over
GPT-2's activations (4,096 rows of 768), forward, sum and backward with the input's and the
weight's gradients, each step waited for; the median of 50 after 5 of warm-up, as webgrad's
bench times them. Prints one JSON line per norm, in webgrad's names.

    python3 tools/torch_norm_ref.py [--device cuda]
"""

import argparse
import json
import statistics
import time

import torch


def timed(norm, x, device, reps=50):
    def step():
        norm(x).sum().backward()
        if device == "cuda":
            torch.cuda.synchronize()

    for _ in range(5):
        step()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    device = parser.parse_args().device
    torch.backends.cuda.matmul.allow_tf32 = False
    rows, width = 4096, 768
    x = torch.randn(rows, width, device=device, requires_grad=True)
    norms = {
        "norm_rmsnorm_fused": torch.nn.RMSNorm(width, eps=1e-5),
        "norm_layernorm": torch.nn.LayerNorm(width, eps=1e-5),
    }
    for name, norm in norms.items():
        seconds = timed(norm.to(device), x, device)
        gb_per_s = 5 * rows * width * 4 / seconds / 1e9
        print(json.dumps({"name": name, "torch": torch.__version__, "ms": round(seconds * 1e3, 4),
                          "gb_per_s": round(gb_per_s, 1)}))


if __name__ == "__main__":
    main()

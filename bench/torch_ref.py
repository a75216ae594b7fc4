"""Reference timings in PyTorch for the project's benchmark workloads (fp32, TF32 off).

Workloads are defined in bench/README.md; this script is the side-by-side anchor.
Run on the GPU that webgrad's benchmark runs on: python3 bench/torch_ref.py [--quick]
Prints one line per workload: name, median ms per step, derived throughput.
"""
import sys, time, statistics, json
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda" if torch.cuda.is_available() else "cpu"
quick = "--quick" in sys.argv
results = {}


def timeit(fn, warm=5, reps=30):
    for _ in range(warm):
        fn()
    if dev == "cuda":
        torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        if dev == "cuda":
            torch.cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def matmul(n):
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    t = timeit(lambda: a @ b, reps=20)
    results[f"matmul_{n}"] = {"ms": t * 1e3, "tflops": 2 * n**3 / t / 1e12}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))

    def forward(self, x):
        return self.net(x)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 32, 3, padding=1)
        self.c2 = nn.Conv2d(32, 64, 3, padding=1)
        self.f1 = nn.Linear(64 * 7 * 7, 128)
        self.f2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.f2(F.relu(self.f1(x.flatten(1))))


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, d):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.lnf(x))


def train_step_bench(name, model, make_batch, loss_fn, items_per_step, unit):
    model = model.to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0) if "gpt" in name else torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = make_batch()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    t = timeit(step, warm=5, reps=20 if quick else 50)
    nparams = sum(p.numel() for p in model.parameters())
    results[name] = {"ms": t * 1e3, unit: items_per_step / t, "params": nparams}


for n in ([1024, 2048] if quick else [1024, 2048, 4096]):
    matmul(n)
B = 128
train_step_bench("mlp_mnist_b128", MLP(), lambda: (torch.randn(B, 784, device=dev), torch.randint(0, 10, (B,), device=dev)), F.cross_entropy, B, "samples_per_s")
train_step_bench("cnn_mnist_b128", CNN(), lambda: (torch.randn(B, 1, 28, 28, device=dev), torch.randint(0, 10, (B,), device=dev)), F.cross_entropy, B, "samples_per_s")
for name, (V, T, L, H, D, Bt) in {"gpt_small_b32": (65, 128, 4, 4, 128, 32), "gpt_nanochar_b64": (65, 256, 6, 6, 384, 64)}.items():
    train_step_bench(name, GPT(V, T, L, H, D), lambda: (torch.randint(0, V, (Bt, T), device=dev), torch.randint(0, V, (Bt, T), device=dev)),
                     lambda logits, y: F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1)), Bt * T, "tokens_per_s")
print("device:", torch.cuda.get_device_name(0) if dev == "cuda" else "cpu", "torch", torch.__version__)
for k, v in results.items():
    print(k, json.dumps({a: (round(b, 3) if isinstance(b, float) else b) for a, b in v.items()}))

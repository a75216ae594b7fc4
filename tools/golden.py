#!/usr/bin/env python3
"""Writes tests/golden/*.json: for small fixed MLP, CNN and GPT models, the weights, a batch,
the loss and every parameter gradient as PyTorch computes them (in float64, on the CPU), and
the weights after one AdamW step, with one parameter group and with nanoGPT's two (decay on
matrices and embeddings only). tests/fidelity.rs checks webgrad against them.

Also, given webgrad checkpoints as arguments, loads each into its torch twin with
load_state_dict (strict) and prints the loss it gives on a random batch.

Usage: python3 tools/golden.py [CHECKPOINT.safetensors ...]
"""

import copy
import json
import pathlib
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from torch_models import from_config  # noqa: E402

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "golden"
ADAMW = dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)

CASES = {
    "mlp": ({"Mlp": {"inputs": 6, "outputs": 3, "depth": 2, "width": 9, "activation": "gelu"}}, "float", (7, 6), 3),
    "cnn": ({"Cnn": {"channels": [2, 3], "hidden": 5, "classes": 4, "image": 8}}, "float", (5, 64), 4),
    "gpt": ({"Gpt": {"vocab": 11, "context": 8, "layers": 2, "heads": 2, "width": 16}}, "tokens", (3, 8), 11),
}


def flat(t):
    return [float(v) for v in t.detach().reshape(-1)]


def golden(name, config, kind, shape, classes):
    torch.manual_seed(0)
    model = from_config(config).double()
    with torch.no_grad():
        for p in model.parameters():  # larger than the default init, so that nothing is tiny
            p.copy_(torch.randn_like(p) * 0.3)
    if kind == "tokens":
        x = torch.randint(0, classes, shape)
        y = torch.randint(0, classes, (shape[0] * shape[1],))
    else:
        x = torch.randn(shape, dtype=torch.float64)
        y = torch.randint(0, classes, (shape[0],))
    weights = {n: {"shape": list(p.shape), "data": flat(p)} for n, p in model.named_parameters()}
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    grads = {n: flat(p.grad) for n, p in model.named_parameters()}
    twin = copy.deepcopy(model)
    for p, q in zip(model.parameters(), twin.parameters()):
        q.grad = p.grad.clone()
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    opt.step()
    after = {n: flat(p) for n, p in model.named_parameters()}
    after_groups = adamw_groups_step(twin)
    record = {
        "config": config,
        "x": flat(x) if kind != "tokens" else [int(v) for v in x.reshape(-1)],
        "x_shape": list(shape),
        "y": [int(v) for v in y],
        "loss": float(loss),
        "weights": weights,
        "grads": grads,
        "adamw": {"lr": ADAMW["lr"], "weight_decay": ADAMW["weight_decay"], "after": after},
        "adamw_groups": {"after": after_groups},
        "torch": torch.__version__,
    }
    (OUT / f"{name}.json").write_text(json.dumps(record))
    print(f"{name}: loss {float(loss):.6f}, {sum(p.numel() for p in model.parameters())} parameters")


def adamw_groups_step(model):
    """One AdamW step with nanoGPT's parameter groups: decay on parameters of 2+ dimensions."""
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": ADAMW["weight_decay"]},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    settings = {k: v for k, v in ADAMW.items() if k != "weight_decay"}
    torch.optim.AdamW(groups, **settings).step()
    return {n: flat(p) for n, p in model.named_parameters()}


def check_checkpoint(path):
    from safetensors import safe_open

    with safe_open(path, "pt") as f:
        meta = f.metadata()
        state = {k: f.get_tensor(k) for k in f.keys() if not k.startswith("optimizer.")}
    config = json.loads(meta["config"])
    model = from_config(config["model"])
    model.load_state_dict(state, strict=True)
    print(f"{path}: load_state_dict accepted {len(state)} tensors of a {list(config['model'])[0]} (step {meta['step']})")


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, case in CASES.items():
        golden(name, *case)
    for path in sys.argv[1:]:
        check_checkpoint(path)


if __name__ == "__main__":
    main()

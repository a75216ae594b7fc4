#!/usr/bin/env python3
"""Trains a webgrad text checkpoint's GPT further in PyTorch, in one process or in several under
torchrun with DistributedDataParallel, and writes a webgrad checkpoint: `webgrad train --load`
and the page's Load go on from what it writes, and it goes on from any of theirs.

The recipe is the checkpoint's own (src/train/config.rs): AdamW with its betas, epsilon and
weight decay (on matrices only, or on all), its learning rate and schedule (warm-up then cosine,
or constant) at the checkpoint's optimizer step, clipping by global norm, its batch and dropout.
The optimizer's moments (optimizer.NAME.exp_avg, .exp_avg_sq) are loaded and saved, so nothing
restarts. With N processes each takes batch / N windows a step (the batch must divide by N) and
DDP averages their gradients, which is the gradient of the whole batch.

Data: the built-in text (web/data/shakespeare.txt.gz) or --text, split as webgrad splits it
(every tenth block of 20,000 characters to validation), encoded with the checkpoint's vocabulary.

Usage:
  torchrun --nproc_per_node 2 tools/train_torch.py START.safetensors --steps 100 --out OUT.safetensors
  torchrun --nproc_per_node 1 tools/train_torch.py START.safetensors --steps 100 --out OUT.safetensors --cpu
  (--cpu: the gloo backend on the CPU; without torchrun it runs as one process on the GPU, or the
  CPU when there is none)

Prints one JSON line per evaluation as the CLI does, and at the end the loss of the written
weights on a fixed batch (the first `--probe` windows of the validation split, at positions
0, context, 2 context, ...), which tests/training.rs recomputes in webgrad.
"""

import argparse
import gzip
import json
import math
import os
import pathlib
import struct
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from torch_models import GPT  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
VAL_BLOCK = 20_000
FORMAT = "webgrad-1"


class Refused(Exception):
    """A checkpoint or setting this tool cannot train: said in one sentence, exit status 1."""


def read_safetensors(path):
    """(tensors by name as float32 torch tensors, metadata) of a safetensors file."""
    data = pathlib.Path(path).read_bytes()
    if len(data) < 8:
        raise Refused(f"{path} is not a safetensors file")
    (size,) = struct.unpack("<Q", data[:8])
    try:
        header = json.loads(data[8:8 + size])
    except ValueError:
        raise Refused(f"{path} is not a safetensors file")
    meta = header.pop("__metadata__", {}) or {}
    body = data[8 + size:]
    tensors = {}
    for name, info in header.items():
        if info["dtype"] != "F32":
            raise Refused(f"{name} is {info['dtype']}, not F32")
        start, end = info["data_offsets"]
        values = torch.frombuffer(bytearray(body[start:end]), dtype=torch.float32)
        tensors[name] = values.reshape(info["shape"])
    return tensors, meta


def write_safetensors(path, tensors, meta):
    """Writes `tensors` (name -> float32 tensor) and `meta` to `path` in full, or not at all: the
    bytes go to a temporary file that is renamed over `path`."""
    header, offset, blobs = {"__metadata__": meta}, 0, []
    for name in sorted(tensors):
        blob = tensors[name].detach().to("cpu", torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = pathlib.Path(str(path) + ".partial")
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)
    os.replace(tmp, path)


def load_text(path, vocab):
    """The text's tokens split as src/data/text.rs splits them: read as bytes (a "\\r" stays a
    character), a leading byte-order mark dropped; under ten blocks, the last tenth is
    validation, else every tenth block of 20,000 characters."""
    if path:
        text = pathlib.Path(path).read_bytes().decode("utf-8").removeprefix("\ufeff")
    else:
        text = gzip.decompress((ROOT / "web" / "data" / "shakespeare.txt.gz").read_bytes()).decode()
    index = {c: i for i, c in enumerate(vocab)}
    unknown = sorted(set(text) - set(index))
    if unknown:
        raise Refused(f"the text holds characters the checkpoint's vocabulary lacks: {''.join(unknown[:10])!r}")
    tokens = torch.tensor([index[c] for c in text], dtype=torch.long)
    if len(tokens) < 10 * VAL_BLOCK:
        cut = len(tokens) * 9 // 10
        return tokens[:cut], tokens[cut:]
    blocks = tokens.split(VAL_BLOCK)
    train = torch.cat([b for i, b in enumerate(blocks) if i % 10 != 9])
    val = torch.cat([b for i, b in enumerate(blocks) if i % 10 == 9])
    return train, val


def lr_factor(schedule, step):
    """src/optim/schedule.rs, Schedule::factor."""
    if schedule == "Constant":
        return 1.0
    s = schedule["WarmupCosine"]
    if step < s["warmup"]:
        return (step + 1) / s["warmup"]
    span = max(s["total"] - s["warmup"], 1)
    t = min((step - s["warmup"]) / span, 1.0)
    return s["min_ratio"] + (1 - s["min_ratio"]) * 0.5 * (1 + math.cos(math.pi * t))


def windows(tokens, n, context, generator, device):
    starts = torch.randint(0, len(tokens) - context, (n,), generator=generator)
    x = torch.stack([tokens[s:s + context] for s in starts])
    y = torch.stack([tokens[s + 1:s + context + 1] for s in starts])
    return x.to(device), y.reshape(-1).to(device)


def probe_loss(model, val, context, n, device):
    """Mean cross-entropy on the validation split's first `n` windows, side by side."""
    x = torch.stack([val[i * context:(i + 1) * context] for i in range(n)]).to(device)
    y = torch.stack([val[i * context + 1:(i + 1) * context + 1] for i in range(n)]).reshape(-1).to(device)
    with torch.no_grad():
        return F.cross_entropy(model(x), y).item()


def build(config, tensors, device):
    """The model and AdamW of a checkpoint's config, holding its weights and moments."""
    if config["task"] != "text" or "Gpt" not in config["model"]:
        raise Refused("only text checkpoints (a GPT) can be trained here")
    g = config["model"]["Gpt"]
    if g.get("norm", "layernorm") != "layernorm":
        raise Refused("the PyTorch twin has LayerNorm blocks only; this checkpoint uses " + g["norm"])
    if g.get("lora"):
        raise Refused("this is a LoRA checkpoint; train on from its merged model (webgrad train --save-merged)")
    rule = config["optimizer"]["rule"]
    if "AdamW" not in rule and "Adam" not in rule:
        raise Refused(f"only Adam and AdamW continue here, not {next(iter(rule))}")
    model = GPT(g["vocab"], g["context"], g["layers"], g["heads"], g["width"], g.get("dropout", 0.0))
    names = dict(model.named_parameters())
    missing = sorted(set(names) - set(tensors))
    if missing:
        raise Refused(f"the checkpoint lacks {', '.join(missing[:5])}")
    with torch.no_grad():
        for name, p in names.items():
            if tuple(tensors[name].shape) != tuple(p.shape):
                raise Refused(f"{name} is {list(tensors[name].shape)} in the file, {list(p.shape)} in the model")
            p.copy_(tensors[name])
    model.to(device)
    opt_cfg = config["optimizer"]
    (kind, hyper), = rule.items()
    decay = opt_cfg["weight_decay"]
    on_all = opt_cfg.get("decay", "all") == "all"
    groups = [
        {"params": [p for n, p in model.named_parameters() if on_all or p.dim() >= 2], "weight_decay": decay},
        {"params": [p for n, p in model.named_parameters() if not (on_all or p.dim() >= 2)], "weight_decay": 0.0},
    ]
    # webgrad's Adam adds its decay to the gradient (L2), as torch.optim.Adam does; AdamW's is
    # decoupled, as torch.optim.AdamW's.
    rule_class = torch.optim.AdamW if kind == "AdamW" else torch.optim.Adam
    opt = rule_class(groups, lr=opt_cfg["lr"], betas=(hyper["beta1"], hyper["beta2"]), eps=hyper["eps"])
    return model, opt


def load_moments(model, opt, tensors, optimizer_step, device):
    """The checkpoint's Adam moments and step count as PyTorch's AdamW state (same names)."""
    for name, p in model.named_parameters():
        m, v = tensors.get(f"optimizer.{name}.exp_avg"), tensors.get(f"optimizer.{name}.exp_avg_sq")
        if m is None or v is None or optimizer_step == 0:
            continue
        opt.state[p] = {"step": torch.tensor(float(optimizer_step)), "exp_avg": m.clone().to(device),
                        "exp_avg_sq": v.clone().to(device)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--text")
    parser.add_argument("--cpu", action="store_true", help="gloo on the CPU instead of NCCL on GPUs")
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--probe", type=int, default=8)
    args = parser.parse_args()

    distributed = "RANK" in os.environ
    on_gpu = torch.cuda.is_available() and not args.cpu
    if distributed:
        dist.init_process_group("nccl" if on_gpu else "gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if on_gpu else "cpu")
    if on_gpu:
        torch.cuda.set_device(device)
    torch.backends.cuda.matmul.allow_tf32 = False

    tensors, meta = read_safetensors(args.checkpoint)
    if meta.get("format") != FORMAT:
        raise Refused(f"{args.checkpoint} is not a webgrad checkpoint (no format metadata)")
    config, vocab = json.loads(meta["config"]), json.loads(meta["vocab"])
    step, opt_step = int(meta["step"]), int(meta.get("optimizer_step", meta["step"]))
    if config["batch"] % world:
        raise Refused(f"the batch of {config['batch']} does not divide among {world} processes")
    model, opt = build(config, tensors, device)
    load_moments(model, opt, tensors, opt_step, device)
    trained = torch.nn.parallel.DistributedDataParallel(model) if distributed else model
    train, val = load_text(args.text, vocab)
    context = config["model"]["Gpt"]["context"]
    generator = torch.Generator().manual_seed((config["seed"] * 1_000_003 + step) * 1009 + rank)
    clip = config["optimizer"].get("clip")

    for i in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = config["optimizer"]["lr"] * lr_factor(config["optimizer"]["schedule"], opt_step)
        x, y = windows(train, config["batch"] // world, context, generator, device)
        trained.train()
        loss = F.cross_entropy(trained(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        step, opt_step = step + 1, opt_step + 1
        if rank == 0 and ((i + 1) % args.eval_every == 0 or i + 1 == args.steps):
            model.eval()
            val_loss = probe_loss(model, val, context, 64, device)
            print(json.dumps({"step": step, "train_loss": loss.item(), "val_loss": val_loss,
                              "processes": world}), flush=True)

    if rank == 0:
        model.eval()
        saved = {name: p for name, p in model.named_parameters()}
        for name, p in model.named_parameters():
            state = opt.state.get(p, {})
            for slot in ("exp_avg", "exp_avg_sq"):
                saved[f"optimizer.{name}.{slot}"] = state.get(slot, torch.zeros_like(p))
        meta = {"format": FORMAT, "config": json.dumps(config), "vocab": json.dumps(vocab),
                "step": str(step), "optimizer_step": str(opt_step)}
        write_safetensors(args.out, saved, meta)
        probe = probe_loss(model, val, context, args.probe, device)
        print(json.dumps({"written": args.out, "step": step, "probe_windows": args.probe,
                          "probe_loss": probe, "processes": world}), flush=True)
    if distributed:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except Refused as e:
        print(f"train_torch.py: {e}", file=sys.stderr)
        sys.exit(1)

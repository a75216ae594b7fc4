"""PyTorch + PEFT's time for a LoRA fine-tuning step of GPT-2 124M, the twin of
`webgrad train --load model.safetensors --lora-rank 8` at its defaults: transformers'
GPT2LMHeadModel (random weights, seed 0), PEFT's LoRA of rank 8 and alpha 8 on c_attn, c_proj
and c_fc, AdamW lr 3e-4 on the adapters, batch 8 windows of 256 tokens each predicting its
next 256, eager fp32 with TF32 off; the median of timed steps after warm-up, each waited for.
Also the same step under bf16 autocast (what a PyTorch user with a recent GPU would run).
With --save DIR, the model is first written there as transformers saves it, for webgrad to
fine-tune the same weights.

Usage: python3 tools/torch_gpt2_lora_ref.py [--save DIR] [--reps N]
"""
import argparse
import json
import pathlib
import sys

import peft
import torch
import torch.nn.functional as F
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from torch_gpt2_ref import median_step_s  # noqa: E402

BATCH, WINDOW, RANK = 8, 256, 8


def lora_model(save):
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0))
    if save:
        model.save_pretrained(save, safe_serialization=True)
    config = peft.LoraConfig(
        r=RANK, lora_alpha=RANK, lora_dropout=0.0, fan_in_fan_out=True,
        target_modules=["c_attn", "c_proj", "c_fc"],
    )
    return peft.get_peft_model(model, config).cuda().train()


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--save", default=None)
    args.add_argument("--reps", type=int, default=30)
    a = args.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = lora_model(a.save)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=3e-4)
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 50257, (BATCH, WINDOW + 1), generator=g).cuda()
    x, y = tokens[:, :-1], tokens[:, 1:]

    def step(autocast):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            logits = model(input_ids=x).logits
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for name, autocast in [("fp32", False), ("bf16_autocast", True)]:
        torch.cuda.reset_peak_memory_stats()
        ms = median_step_s(lambda: step(autocast), a.reps) * 1e3
        peak = torch.cuda.max_memory_allocated() / 2**20
        print(json.dumps({
            "workload": f"gpt2_lora_r{RANK}_b{BATCH}x{WINDOW}", "framework": f"pytorch+peft {name}",
            "ms_per_step": round(ms, 2), "peak_mib": round(peak),
            "adapter_params": sum(p.numel() for p in trainable),
            "versions": f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}",
            "device": torch.cuda.get_device_name(),
        }))


if __name__ == "__main__":
    main()

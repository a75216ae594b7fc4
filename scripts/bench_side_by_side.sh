#!/usr/bin/env bash
# Runs webgrad's benchmark and PyTorch's reference (torch_ref.py) on the same GPU in one go and
# prints both with the time ratio (ours / PyTorch) per workload.
# Usage: scripts/bench_side_by_side.sh WEBGRAD_BINARY TORCH_REF_PY [--quick]
set -uo pipefail
bin=$1
ref=$2
shift 2
out=$(mktemp -d)
"$bin" bench "$@" >"$out/ours.txt" 2>"$out/ours.err" || { cat "$out/ours.err"; exit 1; }
WEBGRAD_UNCHECKED=1 "$bin" bench "$@" --only matmul >"$out/unchecked.txt" 2>>"$out/ours.err"
python3 "$ref" "$@" >"$out/torch.txt" 2>"$out/torch.err" || { cat "$out/torch.err"; exit 1; }
python3 - "$out" <<'PY'
import json, sys, pathlib
out = pathlib.Path(sys.argv[1])
def read(name):
    rows, device = {}, ""
    for line in (out / name).read_text().splitlines():
        if line.startswith("device:"):
            device = line
            continue
        key, _, rest = line.partition(" ")
        if rest.startswith("{"):
            rows[key] = json.loads(rest)
    return device, rows
d_ours, ours = read("ours.txt")
_, unchecked = read("unchecked.txt")
d_torch, torch = read("torch.txt")
print("webgrad", d_ours)
print("pytorch", d_torch)
print(f"{'workload':<24}{'webgrad ms':>12}{'torch ms':>12}{'ratio':>8}  throughput (ours / torch), counters")
for name, r in {**ours, **unchecked}.items():
    base = name.removesuffix("_unchecked")
    t = torch.get(base)
    unit = next(k for k in r if k in ("tflops", "samples_per_s", "tokens_per_s", "gb_per_s", "allocs_per_s"))
    ratio = f"{r['ms'] / t['ms']:.2f}x" if t else "-"
    tp = f"{r[unit]:.3g} / {t[unit]:.3g} {unit}" if t else f"{r[unit]:.3g} {unit}"
    counters = {k: r[k] for k in ("gpu_ms", "gpu_speedup", "pipelined_ms", "record_ms", "record_us_per_dispatch", "dispatches_per_step", "bind_groups_created_per_step", "submits_per_step", "buffers_created_per_step", "gpu_bytes_live") if k in r}
    print(f"{name:<24}{r['ms']:>12.3f}{(t['ms'] if t else float('nan')):>12.3f}{ratio:>8}  {tp}  {json.dumps(counters)}")
PY

#!/usr/bin/env bash
# GPT-2 124M (batch 4, context 1024) trained three ways on one GPU, in one go: webgrad's
# gpt2_124m_b4 workload, PyTorch's twin (tools/torch_gpt2_ref.py, eager and compiled) and
# llm.c's train_gpt2_fp32.cu, built twice: as published (TF32 on, since the GPU is compute
# capability 8 or more) and with that one line changed to keep TF32 off, as webgrad and the
# PyTorch lines run. llm.c reads its weights and tokens from files that tools/llmc_inputs.py
# writes with random contents.
# Usage: scripts/bench_gpt2.sh WEBGRAD_BINARY [LLMC_SOURCE_DIR [OUT_DIR]]
# LLMC_SOURCE_DIR defaults to bench/llmc, a clone of karpathy/llm.c at commit f1e2ace (MIT
# licence; not kept in this repository, see bench/README.md). Needs CUDA's nvcc and PyTorch
# with CUDA.
set -euo pipefail
bin=$1
llmc=${2:-$(cd "$(dirname "$0")/.." && pwd)/bench/llmc}
out=${3:-$(mktemp -d)}
mkdir -p "$out/src"
cp -r "$llmc"/. "$out/src/"

published='int enable_tf32 = deviceProp.major >= 8 ? 1 : 0;'
grep -qF "$published" "$out/src/train_gpt2_fp32.cu" || {
  echo "train_gpt2_fp32.cu no longer holds the line that turns TF32 on: $published" >&2
  exit 1
}
sed "s/$published/int enable_tf32 = 0;/" "$out/src/train_gpt2_fp32.cu" >"$out/src/train_gpt2_fp32_notf32.cu"

python3 tools/llmc_inputs.py "$out" --steps 30
for variant in fp32 fp32_notf32; do
  nvcc -O3 --use_fast_math -arch=sm_90 -I"$out/src" "$out/src/train_gpt2_$variant.cu" \
    -lcublas -lcublasLt -o "$out/llmc_$variant"
  # One pass over the 30 training batches; validation and sampling only at the ends (untimed).
  (cd "$out" && "./llmc_$variant" -i train.bin -j val.bin -b 4 -t 1024 -v 100000 -s 100000 -g 2 -m 1) \
    >"$out/llmc_$variant.txt"
done

"$bin" bench --only gpt2 >"$out/ours.txt"
python3 tools/torch_gpt2_ref.py --compiled >"$out/torch.txt"

python3 - "$out" <<'PY'
import json, pathlib, re, statistics, sys
out = pathlib.Path(sys.argv[1])

def llmc_ms(name):
    """Median step time, leaving out the first three steps (warm-up)."""
    steps = re.findall(r"step\s+\d+/\d+: train loss [\d.]+ \(([\d.]+) ms", (out / name).read_text())
    return statistics.median(float(s) for s in steps[3:])

def lines(name):
    rows = {}
    for line in (out / name).read_text().splitlines():
        key, _, rest = line.partition(" ")
        if rest.startswith("{"):
            rows[key] = json.loads(rest)
        elif line.startswith("device:"):
            print(name, line)
    return rows

ours = lines("ours.txt")["gpt2_124m_b4"]["ms"]
torch = lines("torch.txt")
rows = [("webgrad", ours),
        ("PyTorch eager", torch["gpt2_124m_b4"]["ms"]),
        ("PyTorch compiled", torch["gpt2_124m_b4_compiled"]["ms"]),
        ("llm.c fp32, TF32 off", llmc_ms("llmc_fp32_notf32.txt")),
        ("llm.c fp32 as published (TF32 on)", llmc_ms("llmc_fp32.txt"))]
print(f"{'gpt2_124m_b4':<36}{'ms/step':>10}{'tokens/s':>12}{'webgrad speed / this':>22}")
for name, ms in rows:
    print(f"{name:<36}{ms:>10.2f}{4 * 1024 / ms * 1e3:>12.0f}{ms / ours:>22.3f}")
PY

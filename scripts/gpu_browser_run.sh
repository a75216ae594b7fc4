#!/usr/bin/env bash
# Runs on a Linux machine with an NVIDIA GPU, in a copy of the repository holding what
# scripts/gpu_browser_pack.sh prepared: unpacks Chromium once (into /opt/chr; CHROME=PATH uses an
# installed Chromium instead), then runs, on the same GPU in one go, the native benchmark,
# PyTorch's reference and the page's bench mode in Chromium (WebGPU on Vulkan). Everything
# lands in $OUT (default /tmp/out).
# Usage: [PARTS=...] [PROFILE=WORKLOADS] bash scripts/gpu_browser_run.sh SITE_NAME [SITE_NAME...] [-- WORKLOADS]
# PARTS, a comma list of bench, f16, play, frames, backends, text, lora, gpt2, soak, firefox,
# autotune, tfjs and torch (default: all but f16, frames, backends, text, lora, gpt2, soak, firefox
# and autotune), picks what runs; f16 mixed precision natively, in the page and in PyTorch; firefox the bench page in Firefox ESR beside Chromium (parts of
# tools/browser/pack_firefox.sh in /tmp); autotune the bench natively, in Chromium and in Firefox
# with each workload's product shapes timed and without (the planner's variants), two rounds in
# turns; lora the page's LoRA fine-tuning; gpt2 GPT-2 124M in the page and natively; text is the
# playground's text task for two minutes as a user runs it (docs/TRAINING.md), frames the page's
# frames while it trains each task, backends the spiral with the Backend control on auto, GPU
# and CPU.
set -uo pipefail
parts=",${PARTS:-bench,play,tfjs,torch},"
want() { [[ $parts == *",$1,"* ]]; }
out=${OUT:-/tmp/out}
mkdir -p "$out"
sites=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sites+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
workloads=${1:-mlp_mnist_b128,cnn_mnist_b128,gpt_small_b32,gpt_nanochar_b64}
last=${sites[${#sites[@]}-1]}
# WebGPU on the real GPU through Vulkan.
vulkan=(--enable-features=Vulkan --use-angle=vulkan --use-vulkan=native)

# Chromium's headless shell from the parts in /tmp, once, unless CHROME names an installed one.
if [ -z "${CHROME:-}" ] && [ ! -x /opt/chr/usr/lib/chromium/chromium-headless-shell ]; then
  mkdir -p /opt/chr && cat /tmp/chr.part.* | xz -d -T0 | tar -C /opt/chr -xf -
fi
# Firefox ESR from its parts in /tmp, once, for PARTS=firefox (tools/browser/pack_firefox.sh).
if { want firefox || want autotune; } && [ ! -x /opt/ff/usr/lib/firefox-esr/firefox-esr ]; then
  mkdir -p /opt/ff && cat /tmp/ff.part.* | xz -d -T0 | tar -C /opt/ff -xf -
fi
# The Vulkan loader, where the machine has none (.gl, from scripts/gpu_browser_pack.sh).
if [ -d .gl ]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt"
python3 -c 'import torch; print(torch.__version__)' >> "$out/gpu.txt" 2>&1

for s in "${sites[@]}"; do
  want bench || continue
  echo "== native $s" >&2
  ".dev/webgrad-$s" bench --only "matmul_1024,$workloads" > "$out/native-$s.txt" 2>&1
  echo "== browser $s" >&2
  bash .dev/browser-gpu/run_chromium.sh ".dev/$s" "bench.html?bench=1&only=matmul_1024,$workloads&quick=1" \
    "$out/browser-$s.txt" 400 "${vulkan[@]}"
done
# With PROFILE=WORKLOADS: the GPU time per kernel of those workloads, in the page (Chrome's
# developer features keep its timestamps unrounded) and natively, in the last site given.
if want bench && [ -n "${PROFILE:-}" ]; then
  bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "bench.html?bench=1&only=$PROFILE&quick=1&profile=1" \
    "$out/profile-browser-$last.txt" 300 --enable-webgpu-developer-features "${vulkan[@]}"
  WEBGRAD_PROFILE=1 ".dev/webgrad-$last" bench --quick --only "$PROFILE" > "$out/profile-native-$last.txt" 2>&1
fi
# Mixed precision, in the last site given: the bench natively and in the page in f32 and in f16,
# Chrome started as f16 needs on NVIDIA under Linux (shader-f16 behind a Dawn toggle, subgroup
# matrices behind --enable-unsafe-webgpu, which run_chromium.sh passes); the playground's tasks
# with the same flags (precision on auto: f16); PyTorch's mixed precision.
f16_chrome=(--enable-dawn-features=vulkan_enable_f16_on_nvidia "${vulkan[@]}")
if want f16; then
  echo "== f16, $last" >&2
  for p in f32 f16; do
    ".dev/webgrad-$last" bench --precision $p --only "matmul_4096,$workloads" > "$out/native-$p-$last.txt" 2>&1
    bash .dev/browser-gpu/run_chromium.sh ".dev/$last" \
      "bench.html?bench=1&only=matmul_4096,$workloads&quick=0&precision=$p" \
      "$out/browser-$p-$last.txt" 400 "${f16_chrome[@]}"
  done
  bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "play.html" "$out/play-f16-$last.txt" 120 "${f16_chrome[@]}"
  [ -f .dev/torch_amp_ref.py ] && python3 .dev/torch_amp_ref.py > "$out/torch-amp.txt" 2>&1
fi
# The playground's own loop on each task's defaults, in the last site given.
if want play; then
  echo "== playground $last" >&2
  bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "play.html" "$out/play-$last.txt" 120 "${vulkan[@]}"
fi
# The page's frames while it trains each task, in every site given (a frozen page shows as a long
# wait between frames).
if want frames; then
  for s in "${sites[@]}"; do
    echo "== frames while training, $s" >&2
    bash .dev/browser-gpu/run_chromium.sh ".dev/$s" "frames.html" "$out/frames-$s.txt" 150 "${vulkan[@]}"
  done
fi
# The spiral with the Backend control on auto, GPU and CPU, in the last site given.
if want backends; then
  echo "== spiral on each backend, $last" >&2
  bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "backends.html" "$out/backends-$last.txt" 90 "${vulkan[@]}"
fi
if want text; then
  echo "== text task, two minutes, $last" >&2
  bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "text.html" "$out/text-$last.txt" 240 "${vulkan[@]}"
fi
if want lora; then
  echo "== LoRA fine-tuning, $last" >&2
  bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "lora.html" "$out/lora-$last.txt" 240 "${vulkan[@]}"
fi
# GPT-2 124M (random weights, written by transformers beside the page) loaded, fine-tuned and
# sampled in the page, then fine-tuned by the native binary from the same file.
if want gpt2; then
  echo "== GPT-2 in the page and natively, $last" >&2
  mkdir -p ".dev/$last/gpt2"
  python3 -c "from transformers import GPT2Config, GPT2LMHeadModel; import torch; torch.manual_seed(0); GPT2LMHeadModel(GPT2Config()).save_pretrained('.dev/$last/gpt2', safe_serialization=True)" 2>/dev/null
  bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "gpt2.html" "$out/gpt2-$last.txt" 300 "${vulkan[@]}"
  # Natively as the page runs it (its blocks recomputed), then as the CLI does by default.
  for recompute in true false; do
    ".dev/webgrad-$last" train --task text --load ".dev/$last/gpt2/model.safetensors" --lora-rank 8 \
      --steps 300 --eval-every 100 --recompute $recompute > "$out/gpt2-native-$recompute-$last.txt" 2>&1
  done
fi
# The bench page in Firefox ESR and in Chromium, one after the other, in the last site given.
if want firefox; then
  echo "== bench page in Firefox, then Chromium, $last" >&2
  page="bench.html?bench=1&only=matmul_1024,$workloads&quick=1"
  bash .dev/browser-gpu/run_firefox.sh ".dev/$last" "$page" "$out/firefox-bench-$last.txt" 300
  bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "$page" "$out/chromium-bench-$last.txt" 300 "${vulkan[@]}"
fi
# The product autotuner's choice against the planner's, in the last site given: each bench with
# the shapes timed (as users run it) and untimed, in turns, twice, in one file per side.
if want autotune; then
  echo "== product shapes timed and untimed, $last" >&2
  page="bench.html?bench=1&only=matmul_1024,$workloads&quick=1"
  for round in 1 2; do
    ".dev/webgrad-$last" bench --only "matmul_1024,$workloads" >> "$out/autotune-native-timed.txt" 2>&1
    ".dev/webgrad-$last" bench --only "matmul_1024,$workloads" --untimed-products >> "$out/autotune-native-untimed.txt" 2>&1
    for side in timed untimed; do
      url=$page; [ $side = untimed ] && url="$page&autotune=off"
      bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "$url" "/tmp/chromium-$side-$round.txt" 300 "${vulkan[@]}"
      bash .dev/browser-gpu/run_firefox.sh ".dev/$last" "$url" "/tmp/firefox-$side-$round.txt" 300
      cat "/tmp/chromium-$side-$round.txt" >> "$out/autotune-chromium-$side.txt"
      cat "/tmp/firefox-$side-$round.txt" >> "$out/autotune-firefox-$side.txt"
    done
  done
fi
# The soak run (tools/browser/inject_soak.js): SOAK_S seconds (default 450) of tasks, saves and
# loads, LoRA and task switches, memory sampled, then the GPU device lost and recovered.
if want soak; then
  echo "== soak, $last" >&2
  soak=${SOAK_S:-450}
  bash .dev/browser-gpu/run_chromium.sh ".dev/$last" "soak.html#soak=$soak" "$out/soak-$last.txt" $((soak + 120)) \
    --enable-precise-memory-info "${vulkan[@]}"
fi
if want tfjs && [ -f .dev/tfjs/tf.min.js ]; then
  echo "== tensorflow.js" >&2
  bash .dev/browser-gpu/run_chromium.sh .dev/tfjs tfjs.html "$out/tfjs.txt" 300 "${vulkan[@]}"
fi
if want torch && [ -f .dev/torch_ref.py ]; then
  echo "== pytorch" >&2
  python3 .dev/torch_ref.py --quick > "$out/torch.txt" 2>&1
fi
# Chromium's logs can be large: keep them beside, not in, what comes back.
mkdir -p /tmp/chrome-logs && mv "$out"/*.chrome.log /tmp/chrome-logs/ 2>/dev/null
tail -n +1 "$out"/*.txt

#!/usr/bin/env bash
# Prepares, under .dev/ and .gl/ (both ignored by git), everything a run on a Linux machine with
# an NVIDIA GPU needs when that machine can install nothing: Chromium's headless shell and
# Firefox ESR in parts (tools/browser/pack_chromium.sh, pack_firefox.sh), the Vulkan loader, the browser helpers (tools/browser/), the
# release site with its bench and playground pages, the native release binary, PyTorch's
# references (bench/) and TensorFlow.js's page. Then prints what to copy there and the command
# that runs it (docs/DEVELOPING.md, "In Chrome on a real GPU").
# Usage: scripts/gpu_browser_pack.sh [SITE_NAME]   (default "site": .dev/site and .dev/webgrad-site)
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-site}
say() { printf '[pack] %s\n' "$*" >&2; }

if ! ls .dev/chr1/chr.part.* >/dev/null 2>&1; then
  say "Chromium's headless shell, in parts of 40 MiB"
  tools/browser/pack_chromium.sh .dev
fi
if ! ls .dev/ff1/ff.part.* >/dev/null 2>&1; then
  say "Firefox ESR and the libraries it needs beyond Chromium's, in parts of 40 MiB"
  tools/browser/pack_firefox.sh .dev
fi
if ! ls .gl/libvulkan1*.deb >/dev/null 2>&1; then
  say "the Vulkan loader and GL libraries (amd64 packages)"
  mkdir -p .gl /tmp/amd64/partial
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
  apt-get "${o[@]}" update -qq
  (cd .gl && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null)
fi
mkdir -p .dev
rm -rf .dev/browser-gpu && cp -r tools/browser .dev/browser-gpu
cp bench/torch_ref.py bench/torch_compile_ref.py bench/torch_amp_ref.py .dev/

say "release site and native binary ($name)"
trunk build --release >/dev/null
cargo build --release --locked --quiet
rm -rf ".dev/$name" && cp -r dist ".dev/$name"
cp target/release/webgrad ".dev/webgrad-$name"
# The bench page, the playground page, the text task's two-minute run, the frame count while
# training, the spiral on each backend, LoRA fine-tuning, GPT-2 and the soak run (tools/browser/): the built index.html with a driver script.
cp tools/browser/inject_bench.js tools/browser/inject_play.js tools/browser/inject_text.js \
  tools/browser/inject_frames.js tools/browser/inject_backends.js tools/browser/inject_lora.js \
  tools/browser/inject_soak.js tools/browser/inject_gpt2.js ".dev/$name/"
for page in bench play text frames backends lora soak gpt2; do
  sed "s#</body>#<script src=\"inject_$page.js\"></script></body>#" dist/index.html > ".dev/$name/$page.html"
done
# TensorFlow.js 4.22, the anchor run beside the page (bench/tfjs.html).
if [ ! -f .dev/tfjs/tf.min.js ]; then
  say "TensorFlow.js 4.22 from npm"
  scratch=$(mktemp -d)
  (cd "$scratch" && npm install --no-audit --no-fund --silent \
    @tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-webgpu@4.22.0)
  mkdir -p .dev/tfjs
  cp "$scratch"/node_modules/@tensorflow/tfjs/dist/tf.min.js \
    "$scratch"/node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js .dev/tfjs/
  rm -rf "$scratch"
fi
cp -f bench/tfjs.html .dev/tfjs/
du -sh .dev/chr* .gl .dev/tfjs ".dev/$name" ".dev/webgrad-$name" | sed 's/^/[pack] /' >&2
n_parts=$(ls -d .dev/chr[0-9]* | wc -l)
n_ff=$(ls -d .dev/ff[0-9]* | wc -l)
cat >&2 <<STEPS
[pack] On the GPU machine, in a copy of this repository:
$(for i in $(seq 1 "$n_parts"); do echo "  copy .dev/chr$i/* to its /tmp/"; done)
$(for i in $(seq 1 "$n_ff"); do echo "  (for PARTS=firefox) copy .dev/ff$i/* to its /tmp/"; done)
  copy .gl, .dev/browser-gpu, .dev/$name, .dev/webgrad-$name, .dev/torch_*.py and .dev/tfjs into it, then run
    bash scripts/gpu_browser_run.sh $name
  (PARTS=text bash scripts/gpu_browser_run.sh $name: only the text task's two-minute page run)
  /tmp and /opt must stay between runs: the first run unpacks Chromium into /opt/chr.
STEPS

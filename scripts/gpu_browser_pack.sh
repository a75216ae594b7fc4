#!/usr/bin/env bash
# Prepares, under .dev/ and .gl/ (both ignored by git), everything a run on the accelerator
# machine carries: Chromium's headless shell in parts (../shared/browser-gpu/pack_chromium.sh),
# the Vulkan loader, the browser helpers, the release site with its bench and playground pages,
# the native release binary and PyTorch's reference. Then prints the device calls that run it
# (docs/BENCHMARKS.md, "In Chrome on the accelerator machine").
# Usage: scripts/gpu_browser_pack.sh [SITE_NAME]   (default "site": .dev/site and .dev/webgrad)
set -euo pipefail
cd "$(dirname "$0")/.."
shared=../shared
name=${1:-site}
say() { printf '[pack] %s\n' "$*" >&2; }

if ! ls .dev/chr1/chr.part.* >/dev/null 2>&1; then
  say "Chromium's headless shell, in parts of 55 MiB"
  "$shared/browser-gpu/pack_chromium.sh" .dev
fi
if ! ls .gl/libvulkan1*.deb >/dev/null 2>&1; then
  say "the Vulkan loader and GL libraries (amd64 packages)"
  mkdir -p .gl /tmp/amd64/partial
  o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
  apt-get "${o[@]}" update -qq
  (cd .gl && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null)
fi
mkdir -p .dev
rm -rf .dev/browser-gpu && cp -r "$shared/browser-gpu" .dev/browser-gpu
cp "$shared/bench/torch_ref.py" "$shared/bench/torch_compile_ref.py" .dev/

say "release site and native binary ($name)"
trunk build --release >/dev/null
cargo build --release --locked --quiet
rm -rf ".dev/$name" && cp -r dist ".dev/$name"
cp target/release/webgrad ".dev/webgrad-$name"
# The bench page, the playground page, the text task's two-minute run, the frame count while
# training, the spiral on each backend and LoRA fine-tuning (tools/browser/): the built index.html with a driver script.
cp "$shared/browser-gpu/inject_bench.js" "$shared/browser-gpu/inject_play.js" tools/browser/inject_text.js \
  tools/browser/inject_frames.js tools/browser/inject_backends.js tools/browser/inject_lora.js ".dev/$name/"
for page in bench play text frames backends lora; do
  sed "s#</body>#<script src=\"inject_$page.js\"></script></body>#" dist/index.html > ".dev/$name/$page.html"
done
# TensorFlow.js 4.22, the anchor run beside the page (../shared/browser-gpu/tfjs.html).
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
cp -f "$shared/browser-gpu/tfjs.html" .dev/tfjs/
du -sh .dev/chr* .gl .dev/tfjs ".dev/$name" ".dev/webgrad-$name" | sed 's/^/[pack] /' >&2
n_parts=$(ls -d .dev/chr[0-9]* | wc -l)
cat >&2 <<CALLS
[pack] Device calls, one right after another (the machine stays warm 30 s between calls):
$(for i in $(seq 1 "$n_parts"); do echo "  carry [\".dev/chr$i\"]:  cp .dev/chr$i/* /tmp/"; done)
  carry [".gl", ".dev/browser-gpu", ".dev/$name", ".dev/webgrad-$name", ".dev/torch_ref.py", ".dev/tfjs"]:
    bash scripts/gpu_browser_run.sh $name
  (PARTS=text bash scripts/gpu_browser_run.sh $name: only the text task's two-minute page run)
CALLS

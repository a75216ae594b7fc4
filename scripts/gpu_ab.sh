#!/usr/bin/env bash
# Runs on a Linux machine with an NVIDIA GPU (see scripts/gpu_browser_pack.sh, once per build): an A/B of
# builds in alternating rounds, each round the native benchmark then the page's bench mode in
# Chromium (WebGPU on Vulkan) for every build, so that the GPU's clock and the machine's state
# fall on all builds alike. Prints one line per workload with its times and CPU per dispatch.
# Usage: bash scripts/gpu_ab.sh ROUNDS WORKLOADS SITE_NAME...   (with .gl, .dev/browser-gpu,
# and .dev/NAME and .dev/webgrad-NAME of each build in place, Chromium's parts in /tmp)
set -uo pipefail
rounds=$1; workloads=$2; shift 2
# Chromium's headless shell from the parts in /tmp, once, unless CHROME names an installed one.
if [ -z "${CHROME:-}" ] && [ ! -x /opt/chr/usr/lib/chromium/chromium-headless-shell ]; then
  mkdir -p /opt/chr && cat /tmp/chr.part.* | xz -d -T0 | tar -C /opt/chr -xf -
fi
if [ -d .gl ]; then
  for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null 2>&1; done
  ldconfig
fi
vulkan=(--enable-features=Vulkan --use-angle=vulkan --use-vulkan=native)
# The workload lines of the bench's output, without the counters that do not move.
pick() {
  grep -o '\(matmul\|gpt\|mlp\|cnn\)[a-z_0-9]* {[^}]*' |
    sed -E 's/\\//g; s/"(bind|buffers|gpu_bytes|params|submits|record_ms|dispatches)[a-z_]*":[0-9.e+]*,?//g'
}
for round in $(seq "$rounds"); do
  for site in "$@"; do
    if [ -x ".dev/webgrad-$site" ]; then
      echo "== round $round $site native"
      ".dev/webgrad-$site" bench --only "$workloads" 2>&1 | pick
    fi
    rm -f /tmp/ab.txt
    bash .dev/browser-gpu/run_chromium.sh ".dev/$site" "bench.html?bench=1&only=$workloads&quick=1" \
      /tmp/ab.txt 300 "${vulkan[@]}" >/dev/null 2>&1
    echo "== round $round $site page"
    pick < /tmp/ab.txt
  done
done

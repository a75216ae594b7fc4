#!/usr/bin/env bash
# Chrome's own trace of the bench page on a machine with a GPU: V8's CPU samples of the page
# (WebAssembly functions by name) and the GPU process's Dawn events, as JSON. Summarise it with
# tools/chrome_trace_summary.py. Run where scripts/gpu_browser_pack.sh's files are in place
# (Chromium's parts in /tmp, .gl, .dev/browser-gpu and .dev/SITE):
#   bash tools/browser/chrome_trace.sh SITE mlp_mnist_b128 $OUT/mlp.json.gz
set -uo pipefail
site=$1; workloads=$2; out=$3
if [ ! -x /opt/chr/usr/lib/chromium/chromium-headless-shell ]; then
  mkdir -p /opt/chr && cat /tmp/chr.part.* | xz -d -T0 | tar -C /opt/chr -xf -
fi
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null 2>&1; done
ldconfig
R=/opt/chr
export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu/pulseaudio:$R/lib/x86_64-linux-gnu:$R/usr/lib/chromium
export FONTCONFIG_FILE=$PWD/.dev/browser-gpu/fonts.conf
categories="disabled-by-default-v8.cpu_profiler,disabled-by-default-v8.cpu_profiler.hires,v8.execute,gpu,gpu.dawn,disabled-by-default-gpu.dawn,toplevel,devtools.timeline"
trace=/tmp/chrome-trace-$$.json
port=$((8200 + RANDOM % 500))
python3 .dev/browser-gpu/serve_collect.py ".dev/$site" $port "$out.bench.txt" 1 120 &
collector=$!
sleep 1
# The trace is written when its duration ends, so the browser stays until then.
"$R/usr/lib/chromium/chromium-headless-shell" --no-sandbox --headless --disable-gpu-sandbox \
  --enable-unsafe-webgpu --ignore-gpu-blocklist --disable-vulkan-surface \
  --user-data-dir=/tmp/chr-trace-$port --disable-background-networking --disable-component-update \
  --no-first-run --enable-features=Vulkan --use-angle=vulkan --use-vulkan=native \
  --trace-startup="$categories" --trace-startup-file=$trace --trace-startup-format=json \
  --trace-startup-duration=${TRACE_SECONDS:-20} \
  "http://127.0.0.1:$port/bench.html?bench=1&only=$workloads&quick=1" > /dev/null 2>&1 &
browser=$!
wait $collector
for _ in $(seq 60); do [ -s $trace ] && break; sleep 1; done
sleep 3
kill $browser 2>/dev/null; sleep 1; kill -9 $browser 2>/dev/null
gzip -c $trace > "$out"
ls -la "$out"

#!/usr/bin/env bash
# Runs one page in Chromium's headless shell on the machine's GPU and collects what the page
# POSTs to /result (see serve_collect.py). The shell is unpacked in /opt/chr (docs/DEVELOPING.md).
# Usage: run_chromium.sh SITE_DIR URL_PATH OUTFILE TIMEOUT_S [extra Chromium flags]
# CHROME=/usr/bin/chromium runs a system Chromium instead (to try a page locally on SwiftShader).
# UNSAFE= (set, empty) leaves out --enable-unsafe-webgpu: Chrome as users run it, without
# subgroup matrices.
here=$(cd "$(dirname "$0")" && pwd)
site=$1; path=$2; out=$3; timeout=$4; shift 4
R=/opt/chr
export LD_LIBRARY_PATH=$R/usr/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu/pulseaudio:$R/lib/x86_64-linux-gnu:$R/usr/lib/chromium
export FONTCONFIG_FILE=$here/fonts.conf
chrome=${CHROME:-$R/usr/lib/chromium/chromium-headless-shell}
# Without a browser the collector would wait its whole timeout for a page that never loads.
if [ ! -x "$chrome" ]; then
  echo "run_chromium.sh: no Chromium at $chrome (unpack its parts into /opt/chr, or set CHROME)" >&2
  exit 1
fi
port=$((8200 + RANDOM % 500))
python3 "$here/serve_collect.py" "$site" $port "$out" 1 "$timeout" &
collector=$!
sleep 1
"$chrome" --no-sandbox --headless --disable-gpu-sandbox ${UNSAFE---enable-unsafe-webgpu} --ignore-gpu-blocklist \
  --disable-vulkan-surface --user-data-dir=/tmp/chr-profile-$port --enable-logging=stderr \
  --disable-background-networking --disable-component-update --no-first-run "$@" \
  "http://127.0.0.1:$port/$path" > "$out.chrome.log" 2>&1 &
browser=$!
wait $collector
kill $browser 2>/dev/null; sleep 1; kill -9 $browser 2>/dev/null
grep -E "FATAL|ERROR:(gpu|dawn|webgpu)" "$out.chrome.log" | head -5
exit 0

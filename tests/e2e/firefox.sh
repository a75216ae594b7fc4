#!/usr/bin/env bash
# The playground in Firefox ESR (Debian's firefox-esr, WebGPU on the machine's Vulkan adapter:
# lavapipe here), headless: a copy of the built site (dist/) with tools/browser/inject_smoke.js,
# which trains each task until it learns and checks its views drew, then loads a tiny GPT-2
# (tools/browser/gpt2_file.js), samples and fine-tunes it, posting what it saw to
# tools/browser/serve_collect.py. No test library drives Debian's Firefox (playwright needs its
# own build), so the page drives itself. Fails unless every task posted "ok".
# Usage: tests/e2e/firefox.sh [OUTPUT_DIR]   (after `trunk build --release`)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-target/e2e/firefox}
firefox=${FIREFOX:-firefox-esr}
rm -rf "$out" && mkdir -p "$out/site" "$out/profile"
cp -r dist/. "$out/site/"
cp tools/browser/inject_smoke.js tools/browser/gpt2_file.js "$out/site/"
sed 's#</body>#<script src="gpt2_file.js"></script><script src="inject_smoke.js"></script></body>#' dist/index.html > "$out/site/smoke.html"
cp tools/browser/firefox_user.js "$out/profile/user.js"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 tools/browser/serve_collect.py "$out/site" "$port" "$out/smoke.txt" 1 900 > "$out/collector.log" 2>&1 &
collector=$!
sleep 1
"$firefox" --headless --no-remote --profile "$out/profile" --window-size 1280,800 \
  "http://127.0.0.1:$port/smoke.html" > "$out/firefox.log" 2>&1 &
browser=$!
wait $collector || true
kill $browser 2>/dev/null || true
cat "$out/smoke.txt" 2>/dev/null | sed 's/^/firefox: /'
if ! grep -q '^DONE smoke' "$out/smoke.txt" 2>/dev/null; then
  echo "firefox: the page did not finish (see $out/firefox.log)" >&2
  exit 1
fi
if grep -q '^fail' "$out/smoke.txt" || [ "$(grep -c '^ok ' "$out/smoke.txt")" -ne 4 ]; then
  echo "firefox: not every task learned and drew, or GPT-2 did not load, sample and train" >&2
  exit 1
fi

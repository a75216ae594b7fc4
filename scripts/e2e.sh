#!/usr/bin/env bash
# End-to-end test of the playground: builds the static site, serves it on localhost and drives
# it in headless Chromium with playwright-core. Screenshots go to target/e2e/.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d tests/e2e/node_modules/playwright-core ]; then
  (cd tests/e2e && npm install --no-audit --no-fund --silent)
fi
trunk build --release
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory dist >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 1
node tests/e2e/playground.mjs "http://127.0.0.1:$port/" target/e2e

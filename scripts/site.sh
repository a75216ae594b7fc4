# Sourced by the scripts that drive the page in headless Chromium: installs playwright-core,
# builds the release site and serves it on a free localhost port until the caller exits.
# Afterwards $site_url is the page's address.

if [ ! -d tests/e2e/node_modules/playwright-core ]; then
  (cd tests/e2e && npm install --no-audit --no-fund --silent)
fi
trunk build --release
site_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$site_port" --bind 127.0.0.1 --directory dist >/dev/null 2>&1 &
site_server=$!
trap 'kill $site_server 2>/dev/null || true' EXIT
sleep 1
site_url="http://127.0.0.1:$site_port/"

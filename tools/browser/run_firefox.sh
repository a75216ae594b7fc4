#!/usr/bin/env bash
# Runs one page in Firefox ESR, headless, on the machine's GPU and collects what the page POSTs
# to /result (see serve_collect.py), as run_chromium.sh does for Chromium. Firefox is Debian's
# firefox-esr with the libraries it needs beyond Chromium's, unpacked in /opt/ff
# (tools/browser/pack_firefox.sh); the libraries of Chromium's pack (/opt/chr) serve it too.
# FIREFOX=firefox-esr runs an installed one instead.
# Usage: run_firefox.sh SITE_DIR URL_PATH OUTFILE TIMEOUT_S
here=$(cd "$(dirname "$0")" && pwd)
site=$1; path=$2; out=$3; timeout=$4
F=/opt/ff R=/opt/chr
export LD_LIBRARY_PATH=$F/usr/lib/firefox-esr:$F/usr/lib/x86_64-linux-gnu:$R/usr/lib/x86_64-linux-gnu:$R/lib/x86_64-linux-gnu
export FONTCONFIG_FILE=$here/fonts.conf
firefox=${FIREFOX:-$F/usr/lib/firefox-esr/firefox-esr}
port=$((8200 + RANDOM % 500))
profile=/tmp/ff-profile-$port
mkdir -p "$profile"
cp "$here/firefox_user.js" "$profile/user.js"
python3 "$here/serve_collect.py" "$site" $port "$out" 1 "$timeout" &
collector=$!
sleep 1
"$firefox" --headless --no-remote --profile "$profile" "http://127.0.0.1:$port/$path" > "$out.firefox.log" 2>&1 &
browser=$!
wait $collector
kill $browser 2>/dev/null; sleep 1; kill -9 $browser 2>/dev/null
grep -iE "webgpu|wgpu|vulkan" "$out.firefox.log" | head -5
exit 0

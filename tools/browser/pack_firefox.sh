#!/usr/bin/env bash
# Packs Debian's Firefox ESR and the libraries it needs beyond Chromium's pack
# (firefox_packages.txt; pack_chromium.sh's, unpacked beside it in /opt/chr, serve it too), for
# a GPU machine that can install nothing, into parts of at most 40 MiB. Firefox brings its own
# NSS. On the GPU machine they unpack into /opt/ff (scripts/gpu_browser_run.sh, PARTS=firefox)
# for run_firefox.sh.
# Usage, from the repository root on a Debian machine with apt: tools/browser/pack_firefox.sh .dev
# Writes DEST/ff1/ff.part.aa, DEST/ff2/ff.part.ab (keep DEST in .git/info/exclude).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/pack_debs.sh" "$here/firefox_packages.txt" ff "${1:-.dev}"

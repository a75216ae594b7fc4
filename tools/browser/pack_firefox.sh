#!/usr/bin/env bash
# Packs Debian's Firefox ESR and the libraries it needs beyond Chromium's pack
# (pack_chromium.sh, unpacked beside it in /opt/chr), for a GPU machine that can install
# nothing, into parts of at most 55 MiB. Firefox brings its own NSS.
# Usage, from the repository root on a Debian machine with apt: tools/browser/pack_firefox.sh .dev
# Writes DEST/ff1/ff.part.aa, DEST/ff2/ff.part.ab (keep DEST in .git/info/exclude); on the GPU
# machine they unpack into /opt/ff (scripts/gpu_browser_run.sh) for run_firefox.sh.
set -euo pipefail
dest=${1:-.dev}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
mkdir -p "$work/debs" "$work/root"
apt-get update -qq
(cd "$work/debs" && apt-get download $(cat "$here/firefox_packages.txt") >/dev/null)
for f in "$work"/debs/*.deb; do dpkg -x "$f" "$work/root"; done
rm -rf "$work"/root/usr/share/{doc,man,locale,lintian,bug}
tar -C "$work/root" -cf - . | xz -4 -T2 > "$work/ff.tar.xz"
(cd "$work" && split -b 55M ff.tar.xz ff.part.)
rm -rf "$dest"/ff[0-9]*
i=0
for p in "$work"/ff.part.*; do i=$((i + 1)); mkdir -p "$dest/ff$i"; mv "$p" "$dest/ff$i/"; done
ls -la "$dest"/ff[0-9]*
rm -rf "$work"

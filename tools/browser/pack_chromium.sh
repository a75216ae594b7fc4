#!/usr/bin/env bash
# Packs Debian's Chromium headless shell and the libraries it needs, for a GPU machine that has
# none of them and cannot install them, into parts of at most 55 MiB (for transfers of limited size).
# Usage, from the repository root on a Debian machine with apt: tools/browser/pack_chromium.sh .dev
# Writes DEST/chr1/chr.part.aa, DEST/chr2/chr.part.ab, ... (keep DEST in .git/info/exclude).
set -euo pipefail
dest=${1:-.dev}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
mkdir -p "$work/debs" "$work/root"
apt-get update -qq
(cd "$work/debs" && apt-get download $(cat "$here/packages.txt") >/dev/null)
for f in "$work"/debs/*.deb; do dpkg -x "$f" "$work/root"; done
rm -rf "$work"/root/usr/share/{doc,man,locale,lintian,bug} "$work"/root/usr/lib/chromium/libVk{Layer_khronos_validation,ICD_mock_icd}.so*
tar -C "$work/root" -cf - . | xz -6 -T2 > "$work/chr.tar.xz"
(cd "$work" && split -b 55M chr.tar.xz chr.part.)
rm -rf "$dest"/chr[0-9]*
i=0
for p in "$work"/chr.part.*; do i=$((i + 1)); mkdir -p "$dest/chr$i"; mv "$p" "$dest/chr$i/"; done
ls -la "$dest"/chr[0-9]*
rm -rf "$work"

#!/usr/bin/env bash
# Packs Debian packages, unpacked, for a GPU machine that cannot install them: downloads those
# PACKAGES lists (amd64, this machine's apt sources), unpacks them into one tree without their
# docs, man pages and locales (and the PATTERNS given, relative to the tree), and writes it
# xz-compressed in parts of at most 40 MiB (a part and a copy of the repository within a
# transfer of 64 MiB) as DEST/NAME1/NAME.part.aa, DEST/NAME2/NAME.part.ab, ... Used by
# pack_chromium.sh and pack_firefox.sh; on the GPU machine
# `cat NAME.part.* | xz -d | tar -x` unpacks them.
# Usage: pack_debs.sh PACKAGES_FILE NAME DEST [PATTERN...]
set -euo pipefail
list=$1; name=$2; dest=$3; shift 3
work=$(mktemp -d)
mkdir -p "$work/debs" "$work/root"
apt-get update -qq
(cd "$work/debs" && apt-get download $(cat "$list") >/dev/null)
for f in "$work"/debs/*.deb; do dpkg -x "$f" "$work/root"; done
rm -rf "$work"/root/usr/share/{doc,man,locale,lintian,bug}
for pattern in "$@"; do rm -rf "$work"/root/$pattern; done
tar -C "$work/root" -cf - . | xz -6 -T2 > "$work/$name.tar.xz"
(cd "$work" && split -b 40M "$name.tar.xz" "$name.part.")
rm -rf "$dest/$name"[0-9]*
i=0
for part in "$work/$name".part.*; do
  i=$((i + 1))
  mkdir -p "$dest/$name$i"
  mv "$part" "$dest/$name$i/"
done
ls -la "$dest/$name"[0-9]*
rm -rf "$work"

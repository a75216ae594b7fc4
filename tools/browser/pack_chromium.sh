#!/usr/bin/env bash
# Packs Debian's Chromium headless shell and the libraries it needs (packages.txt), for a GPU
# machine that has none of them and cannot install them, into parts of at most 40 MiB.
# Usage, from the repository root on a Debian machine with apt: tools/browser/pack_chromium.sh .dev
# Writes DEST/chr1/chr.part.aa, DEST/chr2/chr.part.ab, ... (keep DEST in .git/info/exclude).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/pack_debs.sh" "$here/packages.txt" chr "${1:-.dev}" \
  'usr/lib/chromium/libVkLayer_khronos_validation.so*' 'usr/lib/chromium/libVkICD_mock_icd.so*'

#!/usr/bin/env bash
# Builds the playground and serves it at http://127.0.0.1:8080 with `trunk serve`.
# Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec trunk serve "$@"

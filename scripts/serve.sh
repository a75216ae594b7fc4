#!/usr/bin/env bash
# Builds the playground and serves it at http://127.0.0.1:8080 with `trunk serve --release`:
# the optimised build, as users get it (a debug build trains many times slower; plain
# `trunk serve` gives one, quicker to rebuild while changing the code). Installs what is
# missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/cargo_env.sh
exec trunk serve --release "$@"

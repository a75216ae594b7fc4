#!/usr/bin/env bash
# Runs the benchmark in the page (?bench=1) in headless Chromium, WebGPU on SwiftShader, and
# prints its lines. Usage: scripts/bench_browser.sh [WORKLOAD,WORKLOAD] (default: matmul_1024
# and mlp_mnist_b128, the ones an emulated GPU finishes in seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/site.sh
node tests/e2e/bench.mjs "$site_url" "${1:-matmul_1024,mlp_mnist_b128}"

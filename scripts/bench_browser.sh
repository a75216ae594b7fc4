#!/usr/bin/env bash
# Runs the benchmark in the page (?bench=1) in headless Chromium, WebGPU on SwiftShader, and
# prints its lines. Usage: scripts/bench_browser.sh [WORKLOAD,WORKLOAD] [MORE] (default:
# matmul_1024 and mlp_mnist_b128, the ones an emulated GPU finishes in seconds; MORE is added to
# the page's query, e.g. "&profile=1" for the GPU time per kernel).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/cargo_env.sh
source scripts/site.sh
node tests/e2e/bench.mjs "$site_url" "${1:-matmul_1024,mlp_mnist_b128}" "${2:-}"

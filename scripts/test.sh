#!/usr/bin/env bash
# Runs every test: native (wgpu on Vulkan; lavapipe where there is no GPU) and in headless
# Chromium (WebGPU on SwiftShader). Installs what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase says when it began, so a slow one shows in CI's log (the whole must stay under 30
# minutes on a fresh 2-core machine, the set-up included).
phase() { echo "== $1 (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"; }
./scripts/setup.sh
source scripts/cargo_env.sh

phase "paths and links stay inside the repository"
python3 tools/check_repo_paths.py

# Software Vulkan wants a runtime dir; without one it only complains, but loudly.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

phase "native tests (wgpu on Vulkan)"
cargo test --release --locked

phase "the op suites and training under only the limits WebGPU guarantees"
WEBGRAD_LIMITS=webgpu cargo test --release --locked --test ops_linear_algebra --test ops_lora --test ops_product_paths \
  --test ops_nn --test ops_attention --test ops_elementwise --test ops_conv_pool --test ops_reduce_move --test training

phase "browser tests (WebGPU in headless Chromium)"
export CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}
# The runner gives the whole browser run 20 s by default; on SwiftShader with 2 cores the tests
# take about 30 s.
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-180}
wasm-pack test --headless --chrome --locked

phase "end-to-end test of the playground (headless Chromium)"
./scripts/e2e.sh
phase "all tests passed"

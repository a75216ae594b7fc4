#!/usr/bin/env bash
# End-to-end test of the playground: builds the static site, serves it on localhost and drives
# it in headless Chromium with playwright-core: what a newcomer meets on the first screen, the
# playground with WebGPU on SwiftShader, quick
# task switching, the playground with no WebGPU at all (the CPU backend) and with only WebGPU's
# guaranteed limits (?limits=webgpu), and what autotuning remembered handed to the worker; then in Firefox
# ESR (tests/e2e/firefox.sh). Screenshots go to target/e2e/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/site.sh
node tests/e2e/first_screen.mjs "$site_url" target/e2e
node tests/e2e/playground.mjs "$site_url" target/e2e
node tests/e2e/task_switching.mjs "$site_url" target/e2e
node tests/e2e/no_webgpu.mjs "$site_url" target/e2e
node tests/e2e/limits.mjs "$site_url" target/e2e
node tests/e2e/tuning_store.mjs "$site_url" target/e2e
# The same site in Firefox ESR, WebGPU on lavapipe: each task learns and its views draw.
tests/e2e/firefox.sh target/e2e/firefox

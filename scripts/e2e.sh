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
# Each part says how long it took: the whole test command must stay under 30 minutes.
timed() {
  local start=$SECONDS
  "$@"
  echo "-- $* took $((SECONDS - start)) s"
}
for part in first_screen playground task_switching no_webgpu limits tuning_store; do
  timed node "tests/e2e/$part.mjs" "$site_url" target/e2e
done
# The same site in Firefox ESR, WebGPU on lavapipe: each task learns and its views draw.
timed tests/e2e/firefox.sh target/e2e/firefox

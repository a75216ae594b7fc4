#!/usr/bin/env bash
# End-to-end test of the playground: builds the static site, serves it on localhost and drives
# it in headless Chromium with playwright-core. Screenshots go to target/e2e/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/site.sh
node tests/e2e/playground.mjs "$site_url" target/e2e

#!/usr/bin/env bash
# Installs what building, serving and testing webgrad needs on a fresh Debian machine, skipping
# whatever is already there at the right version. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages: lavapipe (software Vulkan) for native tests, Chromium and Firefox ESR for
# browser tests;
# Node's npm for the end-to-end tests' playwright-core, and curl for rustup, where missing.
apt_packages=(mesa-vulkan-drivers chromium chromium-driver firefox-esr)
command -v npm >/dev/null || apt_packages+=(nodejs npm)
command -v cargo >/dev/null || apt_packages+=(curl ca-certificates)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Rust itself, through rustup, on a machine that has none; the scripts that call this one read
# ~/.cargo/env after it (scripts/cargo_env.sh).
if ! command -v cargo >/dev/null; then
  say "Rust through rustup (https://rustup.rs)"
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal
  # shellcheck source=/dev/null
  source "$HOME/.cargo/env"
fi

# The WebAssembly target.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# cargo_tool BIN CRATE VERSION: install CRATE at VERSION unless `BIN --version` already says it.
cargo_tool() {
  local bin=$1 crate=$2 version=$3
  if command -v "$bin" >/dev/null && "$bin" --version 2>/dev/null | grep -qF " $version"; then
    return
  fi
  say "cargo install $crate $version (takes minutes on 2 cores, once)"
  cargo install "$crate" --version "$version" --locked --quiet \
    || cargo install "$crate" --version "$version" --quiet
}

# wasm-bindgen-cli must be exactly the wasm-bindgen of Cargo.lock.
bindgen_version=$(awk '/^name = "wasm-bindgen"$/ {getline; gsub(/[^0-9.]/, ""); print; exit}' Cargo.lock)
cargo_tool wasm-bindgen wasm-bindgen-cli "$bindgen_version"
cargo_tool wasm-pack wasm-pack 0.15.1
# trunk 0.22 needs a newer rustc than the machine's 1.95.
cargo_tool trunk trunk 0.21.14

say "ready"

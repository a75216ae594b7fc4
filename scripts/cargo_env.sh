# Sourced after scripts/setup.sh: puts a Rust that setup.sh installed through rustup on PATH
# (a machine that already had Rust keeps its own).
if ! command -v cargo >/dev/null && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck source=/dev/null
  source "$HOME/.cargo/env"
fi

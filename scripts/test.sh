#!/usr/bin/env bash
# The project's test command (README): formatting, lints, every Rust test,
# doc tests, and the Python compatibility suites against the real binaries.
# Installs what it needs (Python venv for the official clients) itself.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export RUST_BACKTRACE=1
# Terminal tests start real interactive shells that read ~/.bashrc. On
# machines whose rc runs `pyenv init`, a shell killed while pyenv rehashes
# leaves a lock that makes every later shell wait 60 s for it; bound that wait.
export PYENV_REHASH_TIMEOUT="${PYENV_REHASH_TIMEOUT:-2}"

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets -- -D warnings

step "build binaries"
cargo build --workspace --bins

step "unit + integration tests (nextest)"
if cargo nextest --version >/dev/null 2>&1; then
    cargo nextest run --workspace --no-fail-fast
else
    cargo test --workspace --no-fail-fast
fi

step "doc tests"
cargo test --workspace --doc

if [ -x compat/run.sh ] && [ "${SKIP_COMPAT:-0}" != "1" ]; then
    step "Python compatibility suites (official openhands-sdk client, openai SDK)"
    bash compat/setup.sh
    bash compat/run.sh
    "${COMPAT_VENV:-/var/cache/openhands-rs/compat-venv}/bin/python" compat/cross_resume.py
fi

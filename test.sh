#!/usr/bin/env bash
# The tests: the Rust workspace (in the `tests` profile: optimised, without the release build's whole-program
# LTO), then the Python package, built and installed into a fresh virtual environment under the target
# directory, and its pytest suite (which also drives the CLI built by the first step).
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo test --workspace --profile tests
venv="$CARGO_TARGET_DIR/python-test-venv"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
# The wheel in the `tests` profile too (python/Cargo.toml): a release wheel's whole-program LTO would double
# the build; what the tests check does not depend on it.
MATURIN_PEP517_ARGS="--profile tests" "$venv/bin/python" -m pip install -q "./python[test]"
LASTHOP_BIN="$CARGO_TARGET_DIR/tests/lasthop" "$venv/bin/python" -m pytest -q python/tests

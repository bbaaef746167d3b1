#!/usr/bin/env bash
# Runs Zetta's whole test suite: installs and builds what it needs (scripts/setup.sh), then
# `cargo test --workspace --release`, and exits with cargo's status.
#
#   bash scripts/test.sh [extra cargo test arguments, e.g. -- --nocapture]
#
# Why --release: setup.sh has just built every crate and dependency in the release profile, so
# the tests reuse that build and only the test harnesses are compiled; the `test` profile would
# compile everything a second time. Slow probes (throughput figures for docs/PERFORMANCE.md)
# are #[ignore]d and do not run here.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
if ! command -v cargo >/dev/null 2>&1; then
    export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi

printf 'test: cargo test --workspace --release %s\n' "$*"
status=0
cargo test --workspace --release "$@" || status=$?
printf 'test: cargo test exited with status %d\n' "$status"
# POSIX conformance through a real mount (needs root and /dev/fuse, as the mount tests do).
if [ "$(id -u)" -eq 0 ] && [ -e /dev/fuse ]; then
    printf 'test: scripts/pjdfstest.sh\n'
    bash scripts/pjdfstest.sh || status=1
fi
exit "$status"

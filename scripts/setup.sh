#!/usr/bin/env bash
# Installs what Zetta's build and tests need on Debian 12 and builds the release binaries.
#
# Idempotent: packages already installed are left alone (apt-get update runs at most once, and
# only when something is missing), and cargo rebuilds only what changed. Works as root with no
# TTY (CI=true); as another user it uses sudo when a package is missing.
#
#   bash scripts/setup.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Packages the build and the tests need: a C compiler for zstd-sys, pkg-config; fuse3
# (fusermount3) for mounts; rsync, git and attr for the tests that run real programs on a
# mount; sanoid (sanoid and syncoid, with the mbuffer, pv and lzop syncoid pipes through;
# its package also brings zfs-fuse as "a ZFS", which the tests never put first in PATH) and
# ssh for the replication tests, whose second host is a network namespace with its own sshd;
# bzip2 and xz-utils unpack the real OpenZFS pool images the format tests read; qemu-utils
# and libnbd-bin are the real NBD clients of the volume tests; ksh runs OpenZFS's own test
# suite (scripts/zts.sh, which installs the rest of what that suite calls); groff-base and
# man-db render the man pages in their test (tests/man_pages.rs), systemd brings
# systemd-analyze for the unit check (tests/service.rs) ...
required_packages=(build-essential pkg-config fuse3 rsync git sanoid mbuffer pv lzop
    openssh-client openssh-server bzip2 xz-utils qemu-utils libnbd-bin ksh groff-base man-db
    systemd)
# ... and packages only benchmarks need. Installed when possible; a failure is a warning.
optional_packages=(fio)
# The oldest Rust that builds the workspace (parking_lot 0.13 declares rust-version 1.95).
rust_version_min="1.95"

# log, die, as_root, package_installed; DEBIAN_FRONTEND.
log_name=setup
. scripts/lib.sh

apt_updated=0
apt_install() {
    # apt_install PACKAGE... : installs the packages, running apt-get update once per run.
    if [ "$apt_updated" -eq 0 ]; then
        log "apt-get update"
        "${as_root[@]}" apt-get update -qq
        apt_updated=1
    fi
    log "apt-get install $*"
    # Services of the packages (sshd, zfs-fuse) are not started: the tests run their own.
    local policy="" status=0
    if [ ! -e /usr/sbin/policy-rc.d ] &&
        printf '#!/bin/sh\nexit 101\n' | "${as_root[@]}" tee /usr/sbin/policy-rc.d >/dev/null; then
        "${as_root[@]}" chmod 755 /usr/sbin/policy-rc.d
        policy=/usr/sbin/policy-rc.d
    fi
    # dpkg's progress lines go to stdout and say nothing useful in a log; errors go to stderr.
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null || status=$?
    if [ -n "$policy" ]; then
        "${as_root[@]}" rm -f "$policy"
    fi
    return "$status"
}

missing_packages() {
    local package
    for package in "$@"; do
        package_installed "$package" || printf '%s\n' "$package"
    done
}

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    mapfile -t missing < <(missing_packages "${required_packages[@]}")
    if [ "${#missing[@]}" -gt 0 ]; then
        apt_install "${missing[@]}" || die "could not install ${missing[*]}"
    fi
    mapfile -t missing < <(missing_packages "${optional_packages[@]}")
    for package in "${missing[@]}"; do
        apt_install "$package" || log "warning: could not install $package (needed by later tests only)"
    done
else
    log "warning: not a Debian system; install ${required_packages[*]} by hand"
fi

# The oracle: OpenZFS's userspace tools (zdb...) and its test fixtures, from bookworm-backports,
# unpacked into /opt/zetta-oracle without replacing zfs-fuse (scripts/oracle.sh says how).
if command -v apt-get >/dev/null 2>&1; then
    bash scripts/oracle.sh || die "could not install the OpenZFS oracle (scripts/oracle.sh)"
fi

# Rust: use the toolchain that is there (rustup's lives in ~/.cargo/bin, which a non-login
# shell may not have on PATH); Debian's cargo/rustc are the last resort.
if ! command -v cargo >/dev/null 2>&1 && [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
    export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    if command -v rustup >/dev/null 2>&1; then
        log "rustup toolchain install stable"
        rustup toolchain install stable --profile minimal
        rustup default stable
    else
        log "cargo not found: falling back to Debian's cargo and rustc"
        apt_install cargo rustc || die "could not install cargo and rustc"
    fi
fi
command -v cargo >/dev/null 2>&1 || die "cargo is still not on PATH"
log "$(cargo --version)"
rustc_version=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$rust_version_min" "$rustc_version" | sort -V | head -n 1)" != "$rust_version_min" ]; then
    die "rustc $rustc_version is older than $rust_version_min; install a current stable Rust with rustup"
fi

log "cargo build --release --workspace"
cargo build --release --workspace
log "done"

#!/usr/bin/env bash
# Installs the oracle: OpenZFS's own userspace tools (zdb, zstream, zhack, ztest...) from
# Debian bookworm-backports, without the kernel module, into a private prefix, so that tests
# can compare what Zetta reads and writes with what real OpenZFS says.
#
#   bash scripts/oracle.sh            # as root (setup.sh runs it)
#
# - Adds /etc/apt/sources.list.d/zetta-bookworm-backports.sources (deb822, main contrib,
#   signed by Debian's archive keyring like the system's own source).
# - Installs the shared libraries: libnvpair3linux libuutil3linux libzfs6linux libzpool6linux.
# - Downloads zfsutils-linux and zfs-test and unpacks them with `dpkg-deb -x` into
#   $ZETTA_ORACLE_PREFIX (default /opt/zetta-oracle). They are NOT installed: zfsutils-linux
#   conflicts with zfs-fuse, and zfs-test depends on the kernel module.
# - Prints where zdb lives. Tests find it at $ZETTA_ORACLE_PREFIX/sbin/zdb (or $ZETTA_ZDB);
#   they never use zfs-fuse's /usr/sbin/zdb, which PATH would find first. The fixtures of the
#   OpenZFS test suite are under $ZETTA_ORACLE_PREFIX/usr/share/zfs/zfs-tests/tests/functional.
#
# Idempotent: when the prefix already holds a working zdb of the expected packages, nothing is
# done (no apt-get update).
set -euo pipefail

prefix="${ZETTA_ORACLE_PREFIX:-/opt/zetta-oracle}"
suite="bookworm-backports"
libs=(libnvpair3linux libuutil3linux libzfs6linux libzpool6linux)
tools=(zfsutils-linux zfs-test)
source_file=/etc/apt/sources.list.d/zetta-bookworm-backports.sources
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# log, die, as_root, package_installed; DEBIAN_FRONTEND.
log_name=oracle
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

zdb="$prefix/sbin/zdb"

oracle_works() {
    # The prefix is complete and zdb runs (it links libzpool from the installed libraries).
    [ -x "$zdb" ] && [ -d "$prefix/usr/share/zfs/zfs-tests/tests/functional" ] &&
        [ -f "$prefix/.zetta-oracle-complete" ] &&
        case "$("$zdb" -l /dev/null 2>&1)" in *"failed to read label"*) true ;; *) false ;; esac
}

version() { paste -sd, "$prefix/.zetta-oracle-complete" 2>/dev/null; }

all_libs_installed() {
    local package
    for package in "${libs[@]}"; do
        package_installed "$package" || return 1
    done
}

if all_libs_installed && oracle_works; then
    log "already installed: zdb is $zdb ($(version))"
    exit 0
fi

command -v apt-get >/dev/null 2>&1 || die "not a Debian system: apt-get not found"

if [ ! -f "$source_file" ]; then
    [ -f "$keyring" ] || die "$keyring is missing (install debian-archive-keyring)"
    log "adding $source_file"
    printf '%s\n' \
        "# Added by Zetta's scripts/oracle.sh: OpenZFS's userspace tools (the test oracle)." \
        "Types: deb" \
        "URIs: http://deb.debian.org/debian" \
        "Suites: $suite" \
        "Components: main contrib" \
        "Signed-By: $keyring" | "${as_root[@]}" tee "$source_file" >/dev/null
fi

log "apt-get update"
"${as_root[@]}" apt-get update -qq || die "apt-get update failed (is $suite reachable?)"

if ! all_libs_installed; then
    log "apt-get install -t $suite ${libs[*]}"
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends -t "$suite" "${libs[@]}" \
        >/dev/null || die "could not install ${libs[*]} from $suite"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "apt-get download -t $suite ${tools[*]}"
# As root, apt downloads as _apt, which must be able to write the directory.
chmod 755 "$work"
[ "$(id -u)" -ne 0 ] || chown _apt "$work" 2>/dev/null || true
(cd "$work" && apt-get download -qq -t "$suite" "${tools[@]}") ||
    die "could not download ${tools[*]} from $suite"

"${as_root[@]}" rm -rf "$prefix.new"
"${as_root[@]}" mkdir -p "$prefix.new"
for deb in "$work"/*.deb; do
    log "unpacking $(basename "$deb") into $prefix"
    "${as_root[@]}" dpkg-deb -x "$deb" "$prefix.new"
done
for deb in "$work"/*.deb; do
    dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb"
done | "${as_root[@]}" tee "$prefix.new/.zetta-oracle-complete" >/dev/null
"${as_root[@]}" rm -rf "$prefix"
"${as_root[@]}" mv "$prefix.new" "$prefix"

oracle_works || die "$zdb does not run (see: $zdb -l /dev/null)"
log "zdb is $zdb ($(version))"

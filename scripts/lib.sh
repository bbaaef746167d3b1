# Shell functions shared by scripts/setup.sh and scripts/oracle.sh; sourced, not run.
# The sourcing script sets `log_name`, the prefix of its messages, first.
#
#   log_name=setup
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

log() { printf '%s: %s\n' "$log_name" "$*"; }
die() { printf '%s: error: %s\n' "$log_name" "$*" >&2; exit 1; }

export DEBIAN_FRONTEND=noninteractive

# The command prefix that runs a command as root: nothing as root, else sudo without a
# password prompt, else `false` (so the command fails).
if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo -n)
else
    as_root=(false)
fi

package_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

#!/bin/sh
# scrub_finish-notify.sh (and resilver_finish-notify.sh, the same script): tells the admin
# that a scrub or resilver of a pool ended, with its `zpool status`. A scan that found
# nothing wrong is reported only when ZED_NOTIFY_VERBOSE=1.
. "${ZED_ZEDLET_DIR}/zed-functions.sh"

pool="${ZEVENT_POOL:-?}"
case "${ZEVENT_SUBCLASS}" in
    resilver_finish) what="resilver" ;;
    *) what="scrub" ;;
esac
status=$("${ZPOOL:-zpool}" status "${pool}" 2>&1)
if [ "${ZED_NOTIFY_VERBOSE:-0}" != 1 ] &&
    printf '%s\n' "${status}" | grep -q "errors: No known data errors" &&
    ! printf '%s\n' "${status}" | grep -Eq "(DEGRADED|FAULTED|UNAVAIL|REMOVED)"; then
    exit 0
fi
body=$(mktemp) || exit 1
trap 'rm -f "${body}"' EXIT
{
    echo "ZFS has finished a ${what}:"
    echo
    echo "   eid: ${ZEVENT_EID}"
    echo " class: ${ZEVENT_SUBCLASS}"
    echo "  host: $(hostname)"
    echo "  time: ${ZEVENT_TIME_STRING}"
    echo "  pool: ${pool}"
    echo
    printf '%s\n' "${status}"
} > "${body}"
zed_notify "ZFS ${what} finished on ${pool}" "${body}"

#!/bin/sh
# statechange-notify.sh: tells the admin that a device of a pool went FAULTED, DEGRADED,
# REMOVED or UNAVAIL (other state changes, such as an offline the admin asked for, are
# not reported).
. "${ZED_ZEDLET_DIR}/zed-functions.sh"

case "${ZEVENT_VDEV_STATE_STR}" in
    FAULTED|DEGRADED|REMOVED|UNAVAIL) ;;
    *) exit 0 ;;
esac
pool="${ZEVENT_POOL:-?}"
vdev="${ZEVENT_VDEV_PATH:-${ZEVENT_VDEV_GUID:-?}}"
body=$(mktemp) || exit 1
trap 'rm -f "${body}"' EXIT
{
    echo "The device ${vdev} of pool ${pool} is ${ZEVENT_VDEV_STATE_STR}."
    echo
    echo "   eid: ${ZEVENT_EID}"
    echo "  host: $(hostname)"
    echo "  time: ${ZEVENT_TIME_STRING}"
    echo
    "${ZPOOL:-zpool}" status "${pool}" 2>&1
} > "${body}"
zed_notify "ZFS device ${vdev} ${ZEVENT_VDEV_STATE_STR} in ${pool}" "${body}"

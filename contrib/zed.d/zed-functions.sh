# zed-functions.sh: shared by Zetta's stock zedlets (contrib/zed.d, installed by
# `zetta install-service`). Sourced, not run.

# shellcheck disable=SC1091
[ -r "${ZED_ZEDLET_DIR}/zed.rc" ] && . "${ZED_ZEDLET_DIR}/zed.rc"

# zed_notify SUBJECT BODYFILE: the subject to syslog; subject and body mailed to
# ZED_EMAIL_ADDR when it is set. Returns 0 when sent, 1 on a mailer failure.
zed_notify()
{
    subject="$1"
    body="$2"
    logger -t "${ZED_SYSLOG_TAG:-zed}" -p daemon.notice -- "${subject}" 2>/dev/null
    [ -n "${ZED_EMAIL_ADDR}" ] || return 0
    prog="${ZED_EMAIL_PROG:-mail}"
    opts="${ZED_EMAIL_OPTS:-"-s '@SUBJECT@' @ADDRESS@"}"
    # The subject may hold spaces: substitute, then let the shell split the options.
    opts=$(printf '%s' "${opts}" | sed -e "s|@ADDRESS@|${ZED_EMAIL_ADDR}|g" \
        -e "s|@SUBJECT@|$(printf '%s' "${subject}" | sed -e 's/[|&\\]/\\&/g')|g")
    eval "\"\${prog}\" ${opts}" < "${body}" || return 1
    return 0
}

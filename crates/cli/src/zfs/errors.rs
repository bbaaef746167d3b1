//! The words of the dataset layer's refusals (libzfs's role: `zfs_standard_error` in
//! `libzfs_util.c`, the per-operation texts of `libzfs_dataset.c` and `zfs_main.c`).
//!
//! The engine answers a `zetta::dsl::DslError`: a condition and its data, no sentence. A
//! command knows what it asked (`ZfsOp`) and turns the pair into OpenZFS 2.3's message,
//! word for word: "cannot <verb> '<name>': <reason>". A variant answered by one operation
//! only has one text whatever the op; the op decides where libzfs words one errno
//! differently per command (ENOENT of a snapshot to destroy, EEXIST of a rename). `Other`
//! is for a caller that cannot name its operation (a receive applying a stream): each
//! variant then gets the text of the operation that returns it.

use crate::zpool::CmdError;
use zetta::dmu_send::{RecvContext, RecvError, RecvRefusal, SendError, StreamError};
use zetta::dsl::DslError;
use zetta::spa::SpaError;

/// What a command asked the dataset layer: libzfs's `errbuf`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ZfsOp<'a> {
    /// `zfs destroy fs@snap…` (`zfs_destroy_snaps_nvl`).
    DestroySnapshots,
    /// `zfs rename from to` of a filesystem or a snapshot (`zfs_rename`).
    Rename { from: &'a str },
    /// Any other command: each condition's own operation words it.
    Other,
}

/// OpenZFS's message for `error` answered to `op`.
pub(crate) fn dsl_error_text(op: ZfsOp<'_>, error: &DslError) -> String {
    match (op, error) {
        // zfs_do_destroy: no snapshot of the spec was found.
        (ZfsOp::DestroySnapshots, DslError::NoSuchDataset { .. }) => {
            "could not find any snapshots to destroy; check snapshot names.".to_string()
        }
        // zfs_open of the named dataset fails first in libzfs.
        (_, DslError::NoSuchDataset { name }) => {
            format!("cannot open '{name}': dataset does not exist")
        }
        // check_parents (zfs_create, zfs_clone, zfs_rename), errbuf "cannot create".
        (_, DslError::NoParent { name }) => format!("cannot create '{name}': parent does not exist"),
        // zfs_rename: the ioctl's EEXIST under "cannot rename '<from>'".
        (ZfsOp::Rename { from }, DslError::Exists { .. }) => {
            format!("cannot rename '{from}': dataset already exists")
        }
        (_, DslError::Exists { name }) if name.contains('@') => {
            format!("cannot create snapshot '{name}': dataset already exists")
        }
        (_, DslError::Exists { name }) => format!("cannot create '{name}': dataset already exists"),
        (_, DslError::NotSnapshot { name }) => format!("'{name}' is not a snapshot"),
        (_, DslError::NotBookmark { name }) => {
            format!("cannot create bookmark '{name}': invalid argument")
        }
        (_, DslError::InvalidName { name }) => format!("cannot open '{name}': invalid name"),
        (_, DslError::NotInPool { name, pool }) => {
            format!("cannot open '{name}': not in pool '{pool}'")
        }
        (ZfsOp::Rename { .. }, DslError::PoolRoot { name }) => {
            format!("cannot rename '{name}': operation does not apply to pools")
        }
        (_, DslError::PoolRoot { name }) => {
            format!("cannot destroy '{name}': operation does not apply to pools")
        }
        (_, DslError::InvalidDelegation { name }) => format!(
            "cannot set permissions on '{name}': operation not applicable to datasets of this type"
        ),
        (_, DslError::Busy { name }) => format!("cannot destroy '{name}': dataset is busy"),
        (_, DslError::DescendantOfSelf { to, .. }) => format!(
            "cannot rename to '{to}': New dataset name cannot be a descendant of current dataset name"
        ),
        (_, DslError::CrossPool { to, .. }) => {
            format!("cannot rename to '{to}': datasets must be within same pool")
        }
        (_, DslError::CrossDataset { to, .. }) => {
            format!("cannot rename to '{to}': snapshots must be part of same dataset")
        }
        // zfs_do_bookmark: EXDEV across pools, ZFS_ERR_BOOKMARK_SOURCE_NOT_ANCESTOR else.
        (_, DslError::BookmarkNotAncestor { snapshot, bookmark }) => {
            let pool = |name: &str| name.split(['/', '@', '#']).next().unwrap_or("").to_string();
            if pool(snapshot) != pool(bookmark) {
                format!("cannot create bookmark '{bookmark}': bookmark is in a different pool")
            } else {
                format!(
                    "cannot create bookmark '{bookmark}': source is not an ancestor of the new bookmark's dataset"
                )
            }
        }
        // zfs_snapshot_nvl's EXDEV.
        (_, DslError::SameFilesystemTwice { .. }) => {
            "cannot create snapshots : multiple snapshots of same fs not allowed".to_string()
        }
        // zfs_do_destroy's destroy_check_dependent.
        (_, DslError::HasChildren { name, children }) => format!(
            "cannot destroy '{name}': filesystem has children\nuse '-r' to destroy the following datasets:\n{}",
            children.join("\n")
        ),
        (_, DslError::HasClones { snapshot, clones }) => format!(
            "cannot destroy '{snapshot}': snapshot has dependent clones\nuse '-R' to destroy the following datasets:\n{}",
            clones.join("\n")
        ),
        // zfs_destroy_snaps_nvl_os: EBUSY through zfs_standard_error.
        (_, DslError::Held { snapshot, .. }) => {
            format!("cannot destroy snapshot {snapshot}: dataset is busy")
        }
        // zfs_do_rollback's rollback_check.
        (_, DslError::NotLatest { snapshot, newer }) => format!(
            "cannot rollback to '{snapshot}': more recent snapshots or bookmarks exist\nuse '-r' to force deletion of the following snapshots and bookmarks:\n{}",
            newer.join("\n")
        ),
        (_, DslError::NoSpace { name }) if name.contains('@') => {
            format!("cannot create snapshot '{name}': out of space")
        }
        (_, DslError::NoSpace { name }) => format!("cannot create '{name}': out of space"),
        // zfs_hold_nvl / zfs_release: EZFS_REFTAG_HOLD, EZFS_REFTAG_RELE.
        (_, DslError::HoldExists { snapshot, .. }) => {
            format!("cannot hold snapshot '{snapshot}': tag already exists on this dataset")
        }
        (_, DslError::NoSuchHold { snapshot, .. }) => {
            format!("cannot release hold from snapshot '{snapshot}': no such tag on this dataset")
        }
        (_, DslError::BookmarkExists { name }) => {
            format!("cannot create bookmark '{name}': bookmark exists")
        }
        // zfs_do_bookmark: ENOTSUP.
        (_, DslError::BookmarksDisabled { name }) => {
            format!("cannot create bookmark '{name}': bookmark feature not enabled")
        }
        // zfs_do_destroy checks zfs_bookmark_exists before lzc_destroy_bookmarks.
        (_, DslError::NoSuchBookmark { name }) => format!("bookmark '{name}' does not exist."),
        // zfs_promote: its own origin check (EZFS_BADTYPE) and the ioctl's EEXIST.
        (_, DslError::NotClone { name }) => {
            format!("cannot promote '{name}': not a cloned filesystem")
        }
        (
            _,
            DslError::PromoteConflict {
                name,
                snapshot,
                origin,
            },
        ) => format!(
            "cannot promote '{name}': conflicting snapshot '{snapshot}' from parent '{origin}'"
        ),
        (_, DslError::ForeignPool) => "operation not supported on OpenZFS pools yet".to_string(),
        (_, DslError::TaskNotRun) => "sync task has not run: its txg did not commit".to_string(),
    }
}

/// A failed engine call of operation `op`: the dataset layer's refusal in OpenZFS's words,
/// any other error as `spa_fail` words it.
pub(crate) fn zfs_fail(op: ZfsOp<'_>) -> impl Fn(SpaError) -> CmdError + '_ {
    move |error| match error {
        SpaError::Dsl(e) => CmdError::Fail(dsl_error_text(op, &e)),
        other => super::spa_fail(other),
    }
}

/// OpenZFS's message for a send that stopped (`zfs_send_one`, `zfs_send` and `zfs_send_resume`
/// in libzfs_sendrecv.c, `zfs_open`'s ENOENT).
pub(crate) fn send_error_text(error: &SendError) -> String {
    match error {
        SendError::NoSuchDataset { name } => {
            format!("cannot open '{name}': dataset does not exist")
        }
        SendError::NotSnapshot { name } => {
            format!("cannot send '{name}': operation only applies to snapshots")
        }
        SendError::NotEarlier { to } => {
            format!("cannot send '{to}': not an earlier snapshot from the same fs")
        }
        SendError::ForeignPool { to } => {
            format!(
                "cannot send '{to}': sending from a pool imported read-only from another implementation is not supported yet"
            )
        }
        SendError::BookmarkReplicationSource => {
            "cannot send: a bookmark cannot be the source of a replication stream".to_string()
        }
        SendError::MissingInDescendant { snapshot, missing } => {
            format!("cannot send {snapshot} recursively: snapshot {missing} does not exist")
        }
        SendError::ResumeGone { name } => format!("cannot resume send: '{name}' does not exist"),
        SendError::ResumeChanged { name } => {
            format!("cannot resume send: '{name}' is no longer the same snapshot")
        }
        SendError::ResumeSourceGone => {
            "cannot resume send: the incremental source no longer exists".to_string()
        }
        SendError::Vanished(name) => {
            format!("cannot send '{name}': snapshot was destroyed during the send")
        }
        SendError::Pool(SpaError::Dsl(e)) => dsl_error_text(ZfsOp::Other, e),
        SendError::Pool(other) => other.to_string(),
    }
}

/// libzfs_sendrecv.c's `errbuf` for what a receive was doing.
fn recv_context_text(context: RecvContext) -> &'static str {
    match context {
        RecvContext::Receive => "cannot receive",
        RecvContext::NewFilesystem => "cannot receive new filesystem stream",
        RecvContext::Incremental => "cannot receive incremental stream",
        RecvContext::Resume => "cannot receive resume stream",
        RecvContext::Abort => "cannot abort receive",
    }
}

/// OpenZFS's message for a receive that stopped (`zfs_receive_one`, `zfs_receive_package`,
/// `recv_skip`'s read errors and `zfs_do_receive`'s `-A` in libzfs_sendrecv.c / zfs_main.c).
pub(crate) fn recv_error_text(error: &RecvError) -> String {
    match error {
        RecvError::Refused { context, why } => {
            let ctx = recv_context_text(*context);
            match why {
                RecvRefusal::SnapshotNameForMultiSnapshot => {
                    format!("{ctx}: cannot specify snapshot name for multi-snapshot stream")
                }
                RecvRefusal::InvalidName => format!("{ctx}: invalid name"),
                RecvRefusal::SnapshotWithNameMode { flag } => {
                    format!("{ctx}: invalid argument - snapshot not allowed with -{flag}")
                }
                RecvRefusal::TargetMissing { target } => {
                    format!("{ctx}: specified fs ({target}) does not exist")
                }
                RecvRefusal::Busy => format!("{ctx}: dataset is busy"),
                RecvRefusal::PartialStateExists { dest_fs } => format!(
                    "{ctx}: destination {dest_fs} contains partially-complete state from \"zfs receive -s\"."
                ),
                RecvRefusal::NothingToAbort { fs } => {
                    format!("'{fs}' does not have any resumable receive state to abort")
                }
                RecvRefusal::OriginMissing { dest_snap } => {
                    format!("{ctx}: local origin for clone {dest_snap} does not exist")
                }
                RecvRefusal::DestinationExists { dest_fs } => {
                    format!("{ctx}: destination '{dest_fs}' exists\nmust specify -F to overwrite it")
                }
                RecvRefusal::DestinationHasSnapshots { first } => format!(
                    "{ctx}: destination has snapshots (eg. {first})\nmust destroy them to overwrite it"
                ),
                RecvRefusal::DestinationIsClone { dest_fs } => format!(
                    "{ctx}: destination '{dest_fs}' is a clone\nmust destroy it to overwrite it"
                ),
                RecvRefusal::DestinationMissing { dest_fs } => {
                    format!("{ctx}: destination '{dest_fs}' does not exist")
                }
                RecvRefusal::ParentMissing { parent } => format!(
                    "cannot open '{parent}': dataset does not exist\n{ctx}: unable to restore to destination"
                ),
                RecvRefusal::SnapshotExists { dest_snap } => {
                    format!("cannot restore to {dest_snap}: destination already exists")
                }
                RecvRefusal::SourceMismatch { dest_fs } => format!(
                    "{ctx}: most recent snapshot of {dest_fs} does not\nmatch incremental source"
                ),
                RecvRefusal::Modified { dest_fs } => format!(
                    "{ctx}: destination {dest_fs} has been modified\nsince most recent snapshot"
                ),
                RecvRefusal::LaterSnapshotPinned { snapshot } => format!(
                    "{ctx}: snapshot {snapshot} cannot be destroyed (it has clones or holds)"
                ),
                RecvRefusal::NoPartialSnapshot { dest_fs } => format!(
                    "{ctx}: destination '{dest_fs}' does not have a partially received snapshot"
                ),
                RecvRefusal::BadResumeToken { why } => format!("{ctx}: {why}"),
                RecvRefusal::ResumeMismatch { dest_fs } => format!(
                    "{ctx}: the stream does not continue the partially received snapshot of {dest_fs}"
                ),
                RecvRefusal::InvalidProperty { name } => {
                    format!("{ctx}: invalid received property '{name}'")
                }
                RecvRefusal::CannotDestroy { name } => format!("{ctx}: cannot destroy '{name}'"),
                RecvRefusal::EmptyInput => format!("{ctx}: failed to read from stream"),
                RecvRefusal::InputFailed { why } => {
                    format!("{ctx}: failed to read from stream ({why})")
                }
            }
        }
        RecvError::Stream {
            context,
            error,
            token,
        } => {
            let ctx = recv_context_text(*context);
            match (token, error) {
                (Some(token), _) => format!(
                    "{ctx}: checksum mismatch or incomplete stream.\nPartially received snapshot is saved.\nA resuming stream can be generated on the sending system by running:\n    zfs send -t {token}"
                ),
                (None, StreamError::Checksum { .. } | StreamError::Truncated { .. }) => {
                    format!("{ctx}: checksum mismatch or incomplete stream")
                }
                (None, other) => format!("{ctx}: {other}"),
            }
        }
        RecvError::Pool { context, error } => {
            let ctx = recv_context_text(*context);
            match error {
                SpaError::NoSpace => format!("{ctx}: out of space"),
                // A refusal of the dataset layer while applying the stream.
                SpaError::Dsl(e) => format!("{ctx}: {}", dsl_error_text(ZfsOp::Other, e)),
                other => format!("{ctx}: {other}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(context: RecvContext, why: RecvRefusal) -> String {
        recv_error_text(&RecvError::Refused { context, why })
    }

    // Why: the engine answers a receive's refusals as variants (session 18); these are the
    // texts libzfs_sendrecv.c prints for them, which scripts (syncoid among them) match.
    #[test]
    fn receive_refusals_in_libzfs_words() {
        let fs = || "tank/restore".to_string();
        assert_eq!(
            refused(
                RecvContext::Incremental,
                RecvRefusal::DestinationMissing { dest_fs: fs() }
            ),
            "cannot receive incremental stream: destination 'tank/restore' does not exist"
        );
        assert_eq!(
            refused(
                RecvContext::Incremental,
                RecvRefusal::SourceMismatch { dest_fs: fs() }
            ),
            "cannot receive incremental stream: most recent snapshot of tank/restore does not\nmatch incremental source"
        );
        assert_eq!(
            refused(
                RecvContext::NewFilesystem,
                RecvRefusal::DestinationExists { dest_fs: fs() }
            ),
            "cannot receive new filesystem stream: destination 'tank/restore' exists\nmust specify -F to overwrite it"
        );
        assert_eq!(
            refused(
                RecvContext::Incremental,
                RecvRefusal::Modified { dest_fs: fs() }
            ),
            "cannot receive incremental stream: destination tank/restore has been modified\nsince most recent snapshot"
        );
        assert_eq!(
            refused(
                RecvContext::NewFilesystem,
                RecvRefusal::ParentMissing {
                    parent: "tank/none".into()
                }
            ),
            "cannot open 'tank/none': dataset does not exist\ncannot receive new filesystem stream: unable to restore to destination"
        );
        assert_eq!(
            refused(
                RecvContext::Receive,
                RecvRefusal::SnapshotWithNameMode { flag: 'd' }
            ),
            "cannot receive: invalid argument - snapshot not allowed with -d"
        );
        assert_eq!(
            refused(RecvContext::Receive, RecvRefusal::EmptyInput),
            "cannot receive: failed to read from stream"
        );
        assert_eq!(
            refused(
                RecvContext::Abort,
                RecvRefusal::NothingToAbort {
                    fs: "tank/dst".into()
                }
            ),
            "'tank/dst' does not have any resumable receive state to abort"
        );
        let saved = RecvError::Stream {
            context: RecvContext::Resume,
            error: StreamError::Truncated { offset_bytes: 7 },
            token: Some("1-abc-12-789c".into()),
        };
        assert_eq!(
            recv_error_text(&saved),
            "cannot receive resume stream: checksum mismatch or incomplete stream.\nPartially received snapshot is saved.\nA resuming stream can be generated on the sending system by running:\n    zfs send -t 1-abc-12-789c"
        );
        let full = RecvError::Pool {
            context: RecvContext::NewFilesystem,
            error: SpaError::NoSpace,
        };
        assert_eq!(
            recv_error_text(&full),
            "cannot receive new filesystem stream: out of space"
        );
    }
}

//! Errors of replication, one enum per side: what a stream's bytes can be wrong with
//! (`StreamError`), what can stop a send (`SendError`) and what can stop a receive
//! (`RecvError`). Pool errors stay `SpaError` inside them, so the CLI can still tell "out of
//! space" from "bad stream". A send's refusals are typed, one variant per condition with its
//! names (the CLI words them as libzfs_sendrecv.c does; `Display` is for developers), and so
//! are a receive's (`RecvRefusal`, under the `RecvContext` that libzfs prefixes its message
//! with). The one sentence kept here is `StreamError`'s: what is wrong with the bytes.

use crate::dmu::DmuError;
use crate::spa::SpaError;
use std::fmt;

/// A stream that cannot be trusted. Every variant names where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamError {
    /// The bytes do not start with a record of ours.
    BadMagic {
        offset_bytes: u64,
    },
    /// A deduplicated stream (`DEDUP` feature, WRITE_BYREF records): OpenZFS 2.2+ refuses
    /// them too and points at `zstream redup` (libzfs's `zfs_receive_impl`, checked on every
    /// substream's BEGIN, so a compound stream is refused at its first deduplicated one).
    Dedup,
    UnsupportedVersion(u64),
    UnknownFeatures(u64),
    /// A record whose fields break the format's rules (lengths, ids, reserved bytes).
    BadRecord {
        seq: u64,
        why: String,
    },
    /// The running checksum stored after record `seq` does not match its bytes: a bit flip,
    /// a lost or reordered record, or a splice of two streams.
    Checksum {
        seq: u64,
    },
    /// A record that is valid on its own but out of place (order, sequence number, a data
    /// record outside a substream).
    OutOfOrder {
        seq: u64,
        why: String,
    },
    /// The input ended inside a substream (truncated stream).
    Truncated {
        offset_bytes: u64,
    },
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::BadMagic { offset_bytes } => {
                write!(
                    f,
                    "invalid stream (bad magic number at byte {offset_bytes})"
                )
            }
            StreamError::Dedup => write!(
                f,
                "stream has deprecated feature: dedup, try 'zstream redup [send in a file] | zfs recv [...]'"
            ),
            StreamError::UnsupportedVersion(v) => write!(f, "unsupported stream version {v}"),
            StreamError::UnknownFeatures(bits) => write!(
                f,
                "stream has unsupported feature, feature flags = {bits:x} (unknown flags = {:x})",
                bits & !crate::dmu_send::record::FEATURES_KNOWN
            ),
            StreamError::BadRecord { seq, why } => write!(f, "invalid record {seq}: {why}"),
            StreamError::Checksum { seq } => {
                write!(f, "checksum mismatch or incomplete stream (record {seq})")
            }
            StreamError::OutOfOrder { seq, why } => {
                write!(f, "invalid stream: record {seq} out of order: {why}")
            }
            StreamError::Truncated { offset_bytes } => write!(
                f,
                "checksum mismatch or incomplete stream (ends at byte {offset_bytes})"
            ),
        }
    }
}

impl std::error::Error for StreamError {}

/// Why a send stopped.
#[derive(Debug)]
pub enum SendError {
    /// ENOENT: the snapshot, bookmark or filesystem named does not exist.
    NoSuchDataset {
        name: String,
    },
    /// EINVAL: a send of something that is not a snapshot.
    NotSnapshot {
        name: String,
    },
    /// EXDEV: the incremental source of `to` is not an earlier snapshot (or bookmark) of its
    /// filesystem.
    NotEarlier {
        to: String,
    },
    /// ENOTSUP: a snapshot of a pool held by the read-only reader of pools another
    /// implementation wrote (`spa::openzfs`), which the send path cannot walk yet.
    ForeignPool {
        to: String,
    },
    /// EINVAL: `-R` from a bookmark.
    BookmarkReplicationSource,
    /// ENOENT: `-R` of `snapshot` where a descendant lacks its snapshot `missing`.
    MissingInDescendant {
        snapshot: String,
        missing: String,
    },
    /// A resume token's snapshot (`name`) no longer exists.
    ResumeGone {
        name: String,
    },
    /// A resume token's snapshot name now holds another snapshot.
    ResumeChanged {
        name: String,
    },
    /// A resume token's incremental source no longer exists.
    ResumeSourceGone,
    /// The snapshot being sent was destroyed (or replaced) between two chunks.
    Vanished(String),
    Pool(SpaError),
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::NoSuchDataset { name } => write!(f, "no dataset {name}"),
            SendError::NotSnapshot { name } => write!(f, "{name} is not a snapshot"),
            SendError::NotEarlier { to } => write!(f, "source of {to} not earlier in its fs"),
            SendError::ForeignPool { to } => write!(
                f,
                "{to} is in a pool imported read-only from another implementation"
            ),
            SendError::BookmarkReplicationSource => write!(f, "-R from a bookmark"),
            SendError::MissingInDescendant { snapshot, missing } => {
                write!(f, "-R of {snapshot}: no {missing}")
            }
            SendError::ResumeGone { name } => write!(f, "resume: no {name}"),
            SendError::ResumeChanged { name } => write!(f, "resume: {name} replaced"),
            SendError::ResumeSourceGone => write!(f, "resume: no incremental source"),
            SendError::Vanished(name) => write!(f, "{name} destroyed during the send"),
            SendError::Pool(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SendError {}

impl From<SpaError> for SendError {
    fn from(e: SpaError) -> Self {
        SendError::Pool(e)
    }
}

impl From<DmuError> for SendError {
    fn from(e: DmuError) -> Self {
        SendError::Pool(SpaError::from(e))
    }
}

/// What a receive was doing when it stopped: libzfs_sendrecv.c's `errbuf`, the prefix of
/// its message ("cannot receive new filesystem stream: …").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvContext {
    /// Before a substream is known (names, the first record, a replication package).
    Receive,
    /// A full stream or a clone (`zfs_receive_one`, `!stream_wantsnewfs` false).
    NewFilesystem,
    /// An incremental stream.
    Incremental,
    /// A `zfs send -t` stream into a `-s` receive's saved state.
    Resume,
    /// `zfs receive -A`.
    Abort,
}

/// Why a receive was refused before it changed anything (or, for `Modified`, before its
/// commit): one variant per condition, with its names. The CLI words each one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecvRefusal {
    /// A snapshot name as the target of a recursive replication stream.
    SnapshotNameForMultiSnapshot,
    /// The destination is not a valid snapshot name.
    InvalidName,
    /// A snapshot target with `-d` (`flag` 'd') or `-e` ('e').
    SnapshotWithNameMode { flag: char },
    /// `-d`/`-e` into a filesystem that does not exist.
    TargetMissing { target: String },
    /// Another receive is writing the destination.
    Busy,
    /// The destination holds a `-s` receive's partial state and this stream is not its
    /// resume.
    PartialStateExists { dest_fs: String },
    /// `-A` of a filesystem with no saved receive state.
    NothingToAbort { fs: String },
    /// A clone stream whose origin snapshot is not in the pool.
    OriginMissing { dest_snap: String },
    /// A full stream onto an existing filesystem without `-F`.
    DestinationExists { dest_fs: String },
    /// `-F` cannot replace a filesystem that has snapshots (`first` is the oldest).
    DestinationHasSnapshots { first: String },
    /// `-F` cannot replace a clone.
    DestinationIsClone { dest_fs: String },
    /// An incremental (or a new filesystem at a pool's top) into a missing filesystem.
    DestinationMissing { dest_fs: String },
    /// The parent of a new filesystem does not exist (and `-d` is not creating it).
    ParentMissing { parent: String },
    /// The snapshot to create exists with another guid.
    SnapshotExists { dest_snap: String },
    /// No snapshot of `dest_fs` has the stream's incremental source guid.
    SourceMismatch { dest_fs: String },
    /// `dest_fs` changed since the incremental source (and `-F` was not given).
    Modified { dest_fs: String },
    /// A snapshot after the incremental source that `-F` would destroy has clones or holds.
    LaterSnapshotPinned { snapshot: String },
    /// A resume stream, and the destination has no partially received snapshot.
    NoPartialSnapshot { dest_fs: String },
    /// The saved resume token cannot be read (`why` is the token layer's reason).
    BadResumeToken { why: String },
    /// A resume stream that does not continue the saved partial snapshot.
    ResumeMismatch { dest_fs: String },
    /// A received property the pool cannot store (empty, NUL, or too long).
    InvalidProperty { name: String },
    /// A replication stream's destroy of what the sender no longer has left `name` after
    /// every pass (each pass destroyed something; the ones before it stay destroyed).
    CannotDestroy { name: String },
    /// The input ended before any record.
    EmptyInput,
    /// Reading the input failed; `why` is the system's text.
    InputFailed { why: String },
}

/// Why a receive stopped. `Display` is for developers; the CLI words each variant as
/// libzfs does.
#[derive(Debug)]
pub enum RecvError {
    /// A refusal before anything was changed (but for `CannotDestroy`).
    Refused {
        context: RecvContext,
        why: RecvRefusal,
    },
    /// The stream is damaged. With `-s`, `token` resumes it.
    Stream {
        context: RecvContext,
        error: StreamError,
        token: Option<String>,
    },
    /// The pool failed (I/O, space) while applying the stream.
    Pool {
        context: RecvContext,
        error: SpaError,
    },
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Refused { context, why } => write!(f, "{context:?}: {why:?}"),
            RecvError::Stream {
                context,
                error,
                token,
            } => {
                write!(f, "{context:?}: {error}")?;
                match token {
                    Some(token) => write!(f, " (resume token {token})"),
                    None => Ok(()),
                }
            }
            RecvError::Pool { context, error } => write!(f, "{context:?}: {error}"),
        }
    }
}

impl std::error::Error for RecvError {}

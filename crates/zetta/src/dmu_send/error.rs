//! Errors of replication, one enum per side: what a stream's bytes can be wrong with
//! (`StreamError`), what can stop a send (`SendError`) and what can stop a receive
//! (`RecvError`). Pool errors stay `SpaError` inside them, so the CLI can still tell "out of
//! space" from "bad stream". A send's refusals are typed, one variant per condition with its
//! names (the CLI words them as libzfs_sendrecv.c does; `Display` is for developers); a
//! receive's refusals still carry OpenZFS's words, complete, for the CLI to print.

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

/// Why a receive stopped. `Display` gives the complete text the CLI prints.
#[derive(Debug)]
pub enum RecvError {
    /// A refusal before anything was changed, with OpenZFS's complete message.
    Refused(String),
    /// The stream is damaged; `context` is OpenZFS's prefix (`cannot receive new filesystem
    /// stream`, …). With `-s`, `token` resumes it.
    Stream {
        context: String,
        error: StreamError,
        token: Option<String>,
    },
    /// The pool failed (I/O, space) while applying the stream.
    Pool { context: String, error: SpaError },
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvError::Refused(message) => write!(f, "{message}"),
            RecvError::Stream {
                context,
                error,
                token,
            } => match token {
                Some(token) => write!(
                    f,
                    "{context}: checksum mismatch or incomplete stream.\nPartially received snapshot is saved.\nA resuming stream can be generated on the sending system by running:\n    zfs send -t {token}"
                ),
                None => match error {
                    StreamError::Checksum { .. } | StreamError::Truncated { .. } => {
                        write!(f, "{context}: checksum mismatch or incomplete stream")
                    }
                    other => write!(f, "{context}: {other}"),
                },
            },
            RecvError::Pool { context, error } => match error {
                SpaError::NoSpace => write!(f, "{context}: out of space"),
                other => write!(f, "{context}: {other}"),
            },
        }
    }
}

impl std::error::Error for RecvError {}

//! Replication: `zfs send` and `zfs receive` (OpenZFS `dmu_send.c`, `dmu_recv.c`, and the
//! stream logic of `libzfs_sendrecv.c`).
//!
//! A snapshot travels as a stream of OpenZFS's `dmu_replay_record_t` records (`record`,
//! docs/STREAM.md), so OpenZFS's tools read what Zetta sends and Zetta receives what
//! OpenZFS sends: BEGIN (names, guids, feature bits), then the objects (OBJECT,
//! FREEOBJECTS) and their data (WRITE, FREE) in (object, offset) order, then END. Every
//! record carries the running fletcher-4 of the substream, and the parser hands a record
//! out only once the next record's header (whose sum covers this record's payload) has
//! verified, so damage of any kind is caught before anything from that record is applied.
//!
//! - `send`: one substream from a snapshot, full or incremental (only blocks born after
//!   the source snapshot's or bookmark's txg: `traverse` prunes the block tree by birth
//!   txg), produced in chunks with a cursor so the pool can be released between chunks;
//!   the cursor is also what resume tokens (`token`) carry.
//! - `replication`: which substreams a command line means (`-i`, `-I`, `-R`).
//! - `recv` / `recv_dsl` / `recv_state` / `recv_replication`: the receiver, pushed bytes as
//!   they come (and, for `-F` with an incremental `-R` stream, what the sender destroyed). It applies verified
//!   records to a work dataset and commits at END (swap into place, snapshot with the
//!   sender's guid); any failure before that leaves the target as it was, or under `-s`
//!   keeps the partial state and a resume token.
//!
//! Invariants: no input byte can make the receiver panic or allocate more than one
//! largest record (16 MiB plus two headers) beyond the chunk it was given; a target is
//! changed only by a substream whose END verified; snapshot guids are the sender's.

mod error;
pub mod record;
#[doc(hidden)]
pub mod record_fuzz;
mod recv;
mod recv_dsl;
mod recv_replication;
mod recv_state;
mod replication;
mod send;
mod send_prelim;
mod token;
mod traverse;

pub use error::{RecvContext, RecvError, RecvRefusal, SendError, StreamError};
pub use recv::{NameMode, Receiver, RecvEvent, RecvOptions, RECV_CHILD_NAME, RECV_STATE_PROP};
pub use recv_state::{abort_resumable_receive, destroy_interrupted_receives, receive_resume_token};
pub use replication::{plan_send, source_name, SendPlan, SendRequest};
pub use send::{SendOptions, Sender, SubstreamSpec};
pub use token::ResumeToken;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_hostile;
#[cfg(test)]
mod tests_options;
#[cfg(test)]
mod tests_replication;

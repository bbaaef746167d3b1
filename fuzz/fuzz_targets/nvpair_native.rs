//! Fuzz target: OpenZFS's natively packed nvlist decoder (`zetta::nvpair_native`), the
//! records of real pool histories.
//!
//! Invariants (checked by `nvpair_native::fuzz_check`, which panics when one breaks):
//! - no input makes `unpack` panic or allocate beyond what its bytes can describe;
//! - every accepted nvlist re-encodes in its byte order to the length consumed, and that
//!   encoding, like the one in the other byte order, decodes to the same list.
//!
//! The default test suite runs the same check on seeded mutations of a list holding every
//! data type in both orders (`nvpair_native::tests::decoder_invariants_hold_on_mutations`)
//! and of a real big-endian history record
//! (crates/zetta/tests/openzfs_history.rs::hostile_history_bytes_never_panic).
//! Seed corpus: the records of any pool history (`zdb -R POOL VDEV:OFFSET:SIZE:dr` of the
//! history object's block, each record after its 8-byte length).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zetta::nvpair_native::fuzz_check(data);
});

//! Fuzz target: the replication stream parser (`zetta::dmu_send::record`).
//!
//! Invariants (checked by `record_fuzz::fuzz_check`, which panics when one breaks):
//! - no input makes the parser panic or allocate beyond one largest record;
//! - the records accepted and the error (if any) do not depend on how the input is split
//!   into pushes;
//! - every accepted record re-encodes to bytes that parse back to the same record.
//!
//! The default test suite runs the same check on seeded mutations
//! (`record_fuzz::tests::parser_invariants_hold_on_mutations`); this target explores further.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zetta::dmu_send::record_fuzz::fuzz_check(data);
});

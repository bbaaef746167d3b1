//! Fuzz target: OpenZFS's XDR nvlist decoder (`zetta::nvpair_xdr`), the bytes of real vdev
//! labels and MOS configs.
//!
//! Invariants (checked by `nvpair_xdr::fuzz_check`, which panics when one breaks):
//! - no input makes `unpack` panic or allocate beyond what its bytes can describe;
//! - every accepted nvlist re-encodes, and the re-encoding decodes to the same list and length.
//!
//! The default test suite runs the same check on seeded mutations of real labels
//! (crates/zetta/tests/nvpair_xdr_oracle.rs::hostile_label_bytes_error_never_panic) and of a
//! list holding every data type (`nvpair_xdr::tests::decoder_invariants_hold_on_mutations`).
//! Seed corpus: the label bytes at offset 16 KiB of any OpenZFS vdev.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zetta::nvpair_xdr::fuzz_check(data);
});

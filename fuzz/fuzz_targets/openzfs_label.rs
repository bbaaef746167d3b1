//! Fuzz target: OpenZFS vdev labels: vdev_phys_t (label checksum, XDR config) and uberblock rings.
//!
//! The check (`zetta::vdev::openzfs::label::fuzz_check`) panics only when an invariant breaks: no input may panic
//! the decoder, loop, or allocate beyond what its bytes describe; see its doc comment for
//! how the input is split and what else it asserts. The default test suite runs the same
//! check on seeded inputs (`fuzz_check_holds_on_random_inputs` beside it), and
//! crates/zetta/tests/openzfs_hostile.rs throws damaged real pools at the whole read path.
//! Seed corpus: a byte, then 112 KiB at offset 16 KiB of any vdev, or its 128 KiB ring at 128 KiB.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zetta::vdev::openzfs::label::fuzz_check(data);
});

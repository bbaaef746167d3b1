//! Fuzz target: OpenZFS checksums, every id, and the embedded (label, gang, ZIL) verify and seal.
//!
//! The check (`zetta_zcommon::checksum::openzfs::fuzz_check`) panics only when an invariant breaks: no input may panic
//! the decoder, loop, or allocate beyond what its bytes describe; see its doc comment for
//! how the input is split and what else it asserts. The default test suite runs the same
//! check on seeded inputs (`fuzz_check_holds_on_random_inputs` beside it), and
//! crates/zetta/tests/openzfs_hostile.rs throws damaged real pools at the whole read path.
//! Seed corpus: an id byte, then any real block.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zetta_zcommon::checksum::openzfs::fuzz_check(data);
});

//! Fuzz target: OpenZFS micro and fat ZAPs (a micro block, a fat header, leaves, list and lookup).
//!
//! The check (`zetta::zap::openzfs::fuzz_check`) panics only when an invariant breaks: no input may panic
//! the decoder, loop, or allocate beyond what its bytes describe; see its doc comment for
//! how the input is split and what else it asserts. The default test suite runs the same
//! check on seeded inputs (`fuzz_check_holds_on_random_inputs` beside it), and
//! crates/zetta/tests/openzfs_hostile.rs throws damaged real pools at the whole read path.
//! Seed corpus: a byte picking the block size, then a real ZAP object's blocks back to back.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zetta::zap::openzfs::fuzz_check(data);
});

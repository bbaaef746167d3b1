//! Fuzz target: OpenZFS dnode_phys_t and objset_phys_t, and the walk of a dnode's block tree.
//!
//! The check (`zetta::dmu::openzfs::dnode::fuzz_check`) panics only when an invariant breaks: no input may panic
//! the decoder, loop, or allocate beyond what its bytes describe; see its doc comment for
//! how the input is split and what else it asserts. The default test suite runs the same
//! check on seeded inputs (`fuzz_check_holds_on_random_inputs` beside it), and
//! crates/zetta/tests/openzfs_hostile.rs throws damaged real pools at the whole read path.
//! Seed corpus: a byte, then a real dnode block (`zdb -R` of a meta-dnode block) followed by a real objset block.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zetta::dmu::openzfs::dnode::fuzz_check(data);
});

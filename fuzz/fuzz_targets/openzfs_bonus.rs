//! Fuzz target: OpenZFS bonus buffers: SA buffers with ZPL attributes and SA xattrs, znode_phys_t, dsl_dir_phys_t, dsl_dataset_phys_t.
//!
//! The check (`zetta::zpl::openzfs::sa::fuzz_check`) panics only when an invariant breaks: no input may panic
//! the decoder, loop, or allocate beyond what its bytes describe; see its doc comment for
//! how the input is split and what else it asserts. The default test suite runs the same
//! check on seeded inputs (`fuzz_check_holds_on_random_inputs` beside it), and
//! crates/zetta/tests/openzfs_hostile.rs throws damaged real pools at the whole read path.
//! Seed corpus: two bytes, then a real file's bonus buffer (`zdb -dddddd` bonus).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zetta::zpl::openzfs::sa::fuzz_check(data);
});

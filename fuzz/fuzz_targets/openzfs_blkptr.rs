//! Fuzz target: OpenZFS block pointers (decode, validate, Display, DVAs, embedded payload decompressed).
//!
//! The check (`zetta::zio::openzfs::blkptr::fuzz_check`) panics only when an invariant breaks: no input may panic
//! the decoder, loop, or allocate beyond what its bytes describe; see its doc comment for
//! how the input is split and what else it asserts. The default test suite runs the same
//! check on seeded inputs (`fuzz_check_holds_on_random_inputs` beside it), and
//! crates/zetta/tests/openzfs_hostile.rs throws damaged real pools at the whole read path.
//! Seed corpus: a byte 0 or 1, then 128 bytes of any real blkptr (`zdb -R POOL VDEV:OFFSET:SIZE:r` of an indirect block).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    zetta::zio::openzfs::blkptr::fuzz_check(data);
});

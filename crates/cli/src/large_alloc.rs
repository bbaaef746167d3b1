//! Large allocations as mappings of their own (glibc's `M_MMAP_THRESHOLD`, for mimalloc).
//!
//! Why: every FUSE worker thread (fuser 0.18) allocates a zeroed 16 MiB request buffer of
//! which the kernel writes at most one request (a 1 MiB write and its header). mimalloc
//! serves such a block from a segment it may have used before and then clears all 16 MiB,
//! making every page resident: ~30 MB per mount, 23 GB for a daemon with 128 pools. A
//! fresh anonymous mapping is zero without being touched, so only the pages the kernel
//! really writes count, and freeing it returns it to the system at once.
//!
//! Invariant: whether a block is a mapping is a function of its layout alone
//! (`is_large`), so `dealloc` and `realloc` know what `alloc` did without bookkeeping.

use std::alloc::{GlobalAlloc, Layout};

/// Smallest allocation made a mapping of its own: far above the largest block (1 MiB
/// records), so the engine's per-block buffers stay with the fast allocator.
pub const LARGE_BYTES_MIN: usize = 8 << 20;
const PAGE_BYTES: usize = 4096;

/// A global allocator that gives allocations of `LARGE_BYTES_MIN` or more (page-aligned at
/// most) their own anonymous mapping and everything else to `A`.
pub struct LargeMapped<A>(pub A);

fn is_large(size: usize, align: usize) -> bool {
    size >= LARGE_BYTES_MIN && align <= PAGE_BYTES
}

unsafe fn map(size: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping has no preconditions.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        std::ptr::null_mut()
    } else {
        ptr.cast()
    }
}

unsafe fn unmap(ptr: *mut u8, size: usize) {
    // SAFETY: the caller passes a mapping `map` made with this size.
    unsafe {
        libc::munmap(ptr.cast(), size);
    }
}

// SAFETY: large blocks are fresh page-aligned mappings (zeroed by the kernel) released
// only by `unmap` with their size; every other block goes to `A` and back to it unchanged.
unsafe impl<A: GlobalAlloc> GlobalAlloc for LargeMapped<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size(), layout.align()) {
            unsafe { map(layout.size()) }
        } else {
            unsafe { self.0.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size(), layout.align()) {
            unsafe { map(layout.size()) }
        } else {
            unsafe { self.0.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_large(layout.size(), layout.align()) {
            unsafe { unmap(ptr, layout.size()) }
        } else {
            unsafe { self.0.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old_large = is_large(layout.size(), layout.align());
        let new_large = is_large(new_size, layout.align());
        match (old_large, new_large) {
            (false, false) => unsafe { self.0.realloc(ptr, layout, new_size) },
            (true, true) => {
                // SAFETY: `ptr` is a mapping of `layout.size()` bytes; the kernel moves it.
                let moved = unsafe {
                    libc::mremap(ptr.cast(), layout.size(), new_size, libc::MREMAP_MAYMOVE)
                };
                if moved == libc::MAP_FAILED {
                    std::ptr::null_mut()
                } else {
                    moved.cast()
                }
            }
            _ => {
                // SAFETY: `new_size` with the old alignment is a valid layout (the caller's
                // contract for realloc); the copy covers what both blocks hold.
                let new_layout =
                    unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
                let new_ptr = unsafe { self.alloc(new_layout) };
                if !new_ptr.is_null() {
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, new_ptr, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                }
                new_ptr
            }
        }
    }
}

/// Turns transparent huge pages off for this process, before it has threads. mimalloc
/// asks for them (`MADV_HUGEPAGE`) on its arenas, and each of the daemon's many threads
/// then keeps its small heap in a whole 2 MiB page of its own: 0.6 MB per thread, three
/// quarters of a mount's cost (`docs/PERFORMANCE.md`, "Many pools and mounts").
pub fn disable_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments and touches no memory of ours; a
    // kernel without it refuses with EINVAL, which changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Why: the daemon's FUSE threads each kept a cleared 16 MiB buffer resident (issue 21
    // item 8); a large block must come back zeroed, survive growth and shrinking across
    // the threshold with its contents, and be released.
    #[test]
    fn large_blocks_are_zeroed_mappings_that_keep_contents_across_realloc() {
        let mut bytes = vec![0u8; LARGE_BYTES_MIN + 4096];
        assert!(bytes.iter().all(|&b| b == 0));
        bytes[LARGE_BYTES_MIN] = 7;
        bytes.resize(3 * LARGE_BYTES_MIN, 1);
        assert_eq!(bytes[LARGE_BYTES_MIN], 7);
        assert_eq!(bytes[3 * LARGE_BYTES_MIN - 1], 1);
        bytes.truncate(1024);
        bytes.shrink_to_fit();
        assert_eq!(bytes.len(), 1024);
        let mut small = vec![5u8; 1 << 20];
        small.resize(LARGE_BYTES_MIN * 2, 6);
        assert_eq!(small[0], 5);
        assert_eq!(small[LARGE_BYTES_MIN * 2 - 1], 6);
    }
}

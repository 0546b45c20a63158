//! The addon's global allocator: mimalloc (see Cargo.toml), asked as the system allocator
//! is asked. The `mimalloc` crate's allocator asks for every allocation through
//! `mi_malloc_aligned`, whose fallback, when the size class has no free block at hand,
//! over-allocates any size that is not a power of two to align it: about 2k of the 31k
//! instructions of a memory-store `approve` went there and to the aligned path's checks
//! (issue 13, callgrind). Every block mimalloc hands out is aligned to a word (block sizes
//! are multiples of one), so an allocation that needs no more takes the plain path.

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout};

/// The alignment of every mimalloc block.
const WORD: usize = std::mem::size_of::<usize>();

pub struct MiMalloc;

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` takes blocks of
// either path); a block of the plain path is word-aligned, and only layouts that need no
// more take it.
unsafe impl GlobalAlloc for MiMalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_malloc(layout.size()).cast()
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_zalloc(layout.size()).cast()
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr.cast());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            mi::mi_realloc(ptr.cast(), new_size).cast()
        } else {
            mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size of every alignment comes back aligned as asked, zeroed when asked, and
    /// keeps its bytes when it grows or shrinks (on either path).
    #[test]
    fn blocks_are_aligned_as_asked_and_keep_their_bytes() {
        let a = MiMalloc;
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            for size in (1..=600).chain([1000, 4095, 4096, 70_000, 3 << 20]) {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a nonzero size; each block is freed with its layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "{size}/{align}"
                    );
                    std::ptr::write_bytes(p, 0xA5, size);
                    let grown = size * 3 + 5;
                    let q = a.realloc(p, layout, grown);
                    assert!(
                        !q.is_null() && (q as usize).is_multiple_of(align),
                        "{size}/{align}"
                    );
                    assert!((0..size).all(|i| *q.add(i) == 0xA5), "{size}/{align}");
                    let r = a.realloc(q, Layout::from_size_align(grown, align).unwrap(), size);
                    assert!((0..size).all(|i| *r.add(i) == 0xA5), "{size}/{align}");
                    a.dealloc(r, layout);
                    let z = a.alloc_zeroed(layout);
                    assert!(
                        (z as usize).is_multiple_of(align) && (0..size).all(|i| *z.add(i) == 0)
                    );
                    a.dealloc(z, layout);
                }
            }
        }
    }
}

//! The process's allocator: the first allocations come from a fixed arena in the binary's zeroed
//! data, bumped forward and never given back to the system; everything after it (and anything
//! large) goes to the system allocator.
//!
//! A hook lives about a millisecond, and with musl's allocator (the static builds') its few
//! thousand small allocations cost dozens of `mmap`/`munmap` pairs, each with page faults and a TLB
//! flush, as size classes are opened and closed again. From the arena they cost an atomic add, and
//! each page of it is faulted in once. Freeing the most recent allocation steps back over it, so
//! short-lived strings and buffers reuse the same memory; any other free leaves a hole until the
//! process ends. A long-running process (the MCP server, `report`) fills the arena within its first
//! moments and from then on uses the system allocator alone: at most [`ARENA_BYTES`] of its memory
//! is never returned.
//!
//! Memory ordering: `next` is the one atomic, and a block changes hands through it. A thread that
//! frees the last block (or shrinks it) gives its bytes back by moving `next` down, and the next
//! thread to move `next` up over those bytes takes them. That thread's writes to them must come
//! after the first thread's, on every CPU (ARM and RISC-V reorder plain stores past a relaxed
//! atomic; x86 happens not to): so every change of `next` that gives bytes back is a release, and
//! every change that takes bytes is an acquire, and the freeing thread's writes happen before the
//! taking thread's. A failed compare-exchange hands nothing over and needs no ordering. Nothing
//! checks this ordering mechanically yet: Miri, whose data-race checker would report a `Relaxed`
//! version of the handover, needs a nightly toolchain with its component, which neither CI nor the
//! test script installs, and the test below runs on x86, which does not reorder those stores.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Room for everything a hook allocates, several times over.
pub const ARENA_BYTES: usize = 2 * 1024 * 1024;
/// Bigger allocations (a transcript's lines, a model's buffers) go to the system at once, so that
/// one of them cannot take the room the many small ones need.
const MAX_FROM_ARENA: usize = 256 * 1024;
/// The arena's own alignment; a layout asking for more goes to the system.
const ARENA_ALIGN: usize = 4096;

/// An allocator serving from `N` bytes of its own before it hands over to the system (see the
/// module doc); `main.rs` makes one of [`ARENA_BYTES`] the global allocator.
#[repr(C, align(4096))]
pub struct Arena<const N: usize> {
    bytes: UnsafeCell<[u8; N]>,
    /// Offset of the first free byte: every live block of the arena ends at or below it. Moved
    /// down with release ordering, up with acquire (see the module doc).
    next: AtomicUsize,
}

// SAFETY: the bytes are only reached through the allocator's methods, which hand each range to
// one owner at a time (an atomic bump or step-back of `next` decides who owns it).
#[allow(unsafe_code, reason = "the arena's bytes are shared between threads by design")]
unsafe impl<const N: usize> Sync for Arena<N> {}

impl<const N: usize> Arena<N> {
    pub const fn new() -> Self {
        Arena { bytes: UnsafeCell::new([0; N]), next: AtomicUsize::new(0) }
    }

    fn base(&self) -> *mut u8 {
        self.bytes.get().cast::<u8>()
    }

    /// The offset of `ptr` in the arena, or `None` when the system allocated it.
    fn offset(&self, ptr: *mut u8) -> Option<usize> {
        let offset = (ptr as usize).wrapping_sub(self.base() as usize);
        (offset < N).then_some(offset)
    }

    /// Takes `layout`'s bytes from the arena: their offset, or `None` when it has no room.
    fn bump(&self, layout: Layout) -> Option<usize> {
        if layout.size() > MAX_FROM_ARENA || layout.align() > ARENA_ALIGN {
            return None;
        }
        // Relaxed: only a first guess at `next` for the compare-exchange below, which checks it.
        let mut next = self.next.load(Ordering::Relaxed);
        loop {
            let start = next.checked_add(layout.align() - 1)? & !(layout.align() - 1);
            let end = start.checked_add(layout.size())?;
            if end > N {
                return None;
            }
            // Acquire on success: the bytes taken may be a block another thread freed (moving `next`
            // down with release), whose writes must happen before ours. Relaxed on failure: nothing
            // is taken, and the loop tries again with the value read.
            match self.next.compare_exchange_weak(next, end, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Some(start),
                Err(now) => next = now,
            }
        }
    }

    /// Moves the end of a block from `old_end` to `new_end` when it is the last block (nothing was
    /// taken after it): stepping back over it when freed, growing or shrinking it in place.
    fn move_end(&self, old_end: usize, new_end: usize) -> bool {
        // AcqRel on success: moving down gives bytes back (release: our writes to them happen
        // before the next taker's), moving up takes bytes another thread may have given back
        // (acquire). Relaxed on failure: the block is not the last, and nothing changes hands.
        new_end <= N && self.next.compare_exchange(old_end, new_end, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }
}

#[allow(unsafe_code, reason = "a global allocator is unsafe by contract")]
// SAFETY: every arena block is a distinct range of `bytes` (offsets only move forward, except
// back over the last block when its owner frees it), aligned as asked; other requests and every
// pointer outside the arena are the system allocator's, passed to it unchanged.
unsafe impl<const N: usize> GlobalAlloc for Arena<N> {
    // Not inlined: inlined into every allocation site, the arena made the binary 10% bigger.
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.bump(layout) {
            // SAFETY: `start + size` is within the arena, so the pointer stays inside `bytes`.
            Some(start) => unsafe { self.base().add(start) },
            // SAFETY: the caller's layout is passed on as it came.
            None => unsafe { System.alloc(layout) },
        }
    }

    /// The system's own zeroed allocation where it serves (for a big buffer, fresh pages that are
    /// zero already, not a pass of writes over them); an arena block is cleared, since a block
    /// stepped back over may have held data.
    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match self.bump(layout) {
            // SAFETY: as in `alloc`; the block is `layout.size()` bytes, all ours.
            Some(start) => unsafe {
                let ptr = self.base().add(start);
                ptr.write_bytes(0, layout.size());
                ptr
            },
            // SAFETY: the caller's layout is passed on as it came.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match self.offset(ptr) {
            Some(start) => {
                self.move_end(start + layout.size(), start);
            }
            // SAFETY: not an arena pointer, so the system allocated it with this layout.
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(start) = self.offset(ptr) else {
            // SAFETY: the system allocated it with this layout; the caller vouches for new_size.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        let old_end = start + layout.size();
        if new_size <= layout.size() {
            self.move_end(old_end, start + new_size);
            return ptr;
        }
        if new_size <= MAX_FROM_ARENA && self.move_end(old_end, start + new_size) {
            return ptr;
        }
        // SAFETY: the caller guarantees new_size, rounded up to the alignment, fits an isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a layout of non-zero size (it is bigger than the old one).
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are live, distinct, and at least `layout.size()` bytes long.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size());
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
#[allow(unsafe_code, reason = "the tests call the allocator's methods as std does")]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn blocks_are_distinct_aligned_and_the_last_one_is_given_back() {
        let arena = Box::new(Arena::<8192>::new());
        // SAFETY: every pointer is freed with the layout it was allocated with, once.
        unsafe {
            let a = arena.alloc(layout(3, 1));
            let b = arena.alloc(layout(16, 8));
            assert_eq!(arena.offset(a), Some(0));
            assert_eq!(arena.offset(b), Some(8), "b starts at the next multiple of its alignment");
            a.write_bytes(1, 3);
            b.write_bytes(2, 16);
            assert!((0..3).all(|i| *a.add(i) == 1) && (0..16).all(|i| *b.add(i) == 2));
            arena.dealloc(a, layout(3, 1));
            assert_eq!(arena.next.load(Ordering::Relaxed), 24, "freeing a block that is not the last leaves a hole");
            arena.dealloc(b, layout(16, 8));
            assert_eq!(arena.next.load(Ordering::Relaxed), 8, "freeing the last block steps back over it");
            let c = arena.alloc(layout(16, 8));
            assert_eq!(c, b, "and its room is used again");
            arena.dealloc(c, layout(16, 8));
        }
    }

    /// A block freed on one thread and taken on another: the second thread's writes must come after
    /// the first's. The only synchronisation between the threads is the arena's own (the flag is
    /// relaxed), so a data-race checker (Miri's) would report a `Relaxed` handover in the arena; run
    /// here on x86, the test shows the block handed over whole, not the ordering.
    #[test]
    fn a_block_freed_on_one_thread_is_taken_whole_on_another() {
        use std::sync::atomic::AtomicBool;
        let arena = Box::new(Arena::<4096>::new());
        let freed = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: the block is written within its layout, then freed once with it.
                unsafe {
                    let a = arena.alloc(layout(64, 8));
                    a.write_bytes(0xAA, 64);
                    arena.dealloc(a, layout(64, 8));
                }
                freed.store(true, Ordering::Relaxed);
            });
            s.spawn(|| {
                while !freed.load(Ordering::Relaxed) {
                    std::thread::yield_now();
                }
                // SAFETY: as above.
                unsafe {
                    let b = arena.alloc(layout(64, 8));
                    assert_eq!(arena.offset(b), Some(0), "the freed room is taken again");
                    b.write_bytes(0xBB, 64);
                    assert!((0..64).all(|i| *b.add(i) == 0xBB));
                    arena.dealloc(b, layout(64, 8));
                }
            });
        });
    }

    #[test]
    fn zeroed_blocks_are_zero_even_where_a_freed_block_was() {
        let arena = Box::new(Arena::<8192>::new());
        // SAFETY: as above.
        unsafe {
            let a = arena.alloc(layout(64, 8));
            a.write_bytes(0xAB, 64);
            arena.dealloc(a, layout(64, 8));
            let z = arena.alloc_zeroed(layout(64, 8));
            assert_eq!(z, a, "the freed room is used again");
            assert!((0..64).all(|i| *z.add(i) == 0));
            let big = arena.alloc_zeroed(layout(MAX_FROM_ARENA + 1, 8));
            assert!(arena.offset(big).is_none() && (0..MAX_FROM_ARENA + 1).step_by(4096).all(|i| *big.add(i) == 0));
            arena.dealloc(big, layout(MAX_FROM_ARENA + 1, 8));
            arena.dealloc(z, layout(64, 8));
        }
    }

    /// A big zeroed buffer costs no writes: the system hands over fresh pages, which stay untouched
    /// (alloc-then-clear would have made every page resident).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_big_zeroed_buffer_is_not_written_over() {
        fn resident_bytes() -> usize {
            let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
            statm.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 4096
        }
        let arena = Box::new(Arena::<8192>::new());
        let size = 256 * 1024 * 1024;
        let before = resident_bytes();
        // SAFETY: as above.
        unsafe {
            let big = arena.alloc_zeroed(layout(size, 8));
            assert!(!big.is_null() && *big == 0 && *big.add(size - 1) == 0);
            let grew = resident_bytes().saturating_sub(before);
            arena.dealloc(big, layout(size, 8));
            assert!(grew < size / 4, "{grew} bytes became resident for a {size}-byte zeroed buffer");
        }
    }

    #[test]
    fn the_last_block_grows_in_place_and_another_moves_with_its_contents() {
        let arena = Box::new(Arena::<8192>::new());
        // SAFETY: as above; realloc is given each block's current layout.
        unsafe {
            let a = arena.alloc(layout(8, 8));
            a.write_bytes(7, 8);
            let grown = arena.realloc(a, layout(8, 8), 64);
            assert_eq!(grown, a, "the last block grows where it is");
            let b = arena.alloc(layout(8, 8));
            let moved = arena.realloc(grown, layout(64, 8), 128);
            assert_ne!(moved, grown, "a block with another after it moves");
            assert_eq!(arena.offset(moved), Some(72));
            assert!((0..8).all(|i| *moved.add(i) == 7), "its contents move with it");
            arena.dealloc(b, layout(8, 8));
            arena.dealloc(moved, layout(128, 8));
        }
    }

    #[test]
    fn a_full_arena_and_big_or_over_aligned_requests_go_to_the_system() {
        let arena = Box::new(Arena::<4096>::new());
        // SAFETY: as above.
        unsafe {
            let fill = arena.alloc(layout(4000, 1));
            assert!(arena.offset(fill).is_some());
            let spill = arena.alloc(layout(200, 8));
            assert!(!spill.is_null() && arena.offset(spill).is_none(), "no room left: the system serves it");
            spill.write_bytes(3, 200);
            let grown = arena.realloc(fill, layout(4000, 1), 5000);
            assert!(arena.offset(grown).is_none(), "grown past the arena, the block moves to the system");
            let big = arena.alloc(layout(MAX_FROM_ARENA + 1, 8));
            assert!(!big.is_null() && arena.offset(big).is_none());
            let aligned = arena.alloc(layout(64, 2 * ARENA_ALIGN));
            assert!(!aligned.is_null() && arena.offset(aligned).is_none());
            assert_eq!(aligned as usize % (2 * ARENA_ALIGN), 0);
            arena.dealloc(aligned, layout(64, 2 * ARENA_ALIGN));
            arena.dealloc(big, layout(MAX_FROM_ARENA + 1, 8));
            arena.dealloc(grown, layout(5000, 1));
            arena.dealloc(spill, layout(200, 8));
        }
    }

    #[test]
    fn threads_never_share_a_block() {
        static ARENA: Arena<{ 1 << 20 }> = Arena::new();
        let arena = &ARENA;
        let handles: Vec<_> = (0..4u8)
            .map(|t| {
                std::thread::spawn(move || {
                    let blocks: Vec<(*mut u8, Layout)> = (0..2000)
                        .map(|i| {
                            let l = layout(1 + i % 64, 1 << (i % 4));
                            // SAFETY: a non-zero layout; the block is written within its size.
                            unsafe {
                                let p = arena.alloc(l);
                                p.write_bytes(t, l.size());
                                (p, l)
                            }
                        })
                        .collect();
                    // SAFETY: each block is read within its size, then freed once with its layout.
                    blocks.iter().rev().all(|&(p, l)| unsafe {
                        let mine = (0..l.size()).all(|i| *p.add(i) == t);
                        arena.dealloc(p, l);
                        mine
                    })
                })
            })
            .collect();
        for h in handles {
            assert!(h.join().unwrap(), "a block was written by another thread");
        }
    }
}

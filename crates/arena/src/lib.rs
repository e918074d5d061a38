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
//! taking thread's. A failed compare-exchange hands nothing over and needs no ordering. The model
//! check below (`mod model`, run by scripts/test with `--cfg loom`) checks this mechanically: loom
//! runs the arena's own `bump` and `move_end` on its atomic under every interleaving and every
//! value the orderings let a load see, and records each thread's writes to the blocks it gets, so
//! a block taken without a happens-before edge from its last owner's writes fails the check. With
//! the handover weakened to `Relaxed` it does fail (a test of the model shows it), where the
//! threaded test on x86 would pass.

#[cfg(loom)]
use loom::sync::atomic::{AtomicUsize, Ordering};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicUsize, Ordering};

/// The orderings of the handover (see the module doc), in one place so that the model check can
/// weaken them and see that it notices.
#[cfg(not(loom))]
mod order {
    use std::sync::atomic::Ordering;

    /// A bump that succeeds: it may take bytes another thread gave back.
    pub const fn take() -> Ordering {
        Ordering::Acquire
    }

    /// A move of the last block's end: down gives bytes back, up takes bytes.
    pub const fn give_or_take() -> Ordering {
        Ordering::AcqRel
    }
}

/// Under the model check: the same orderings, or `Relaxed` on a thread whose model asks for the
/// weak handover (loom runs a model's threads on the thread that started it).
#[cfg(loom)]
mod order {
    use loom::sync::atomic::Ordering;
    use std::cell::Cell;

    std::thread_local! {
        pub static WEAK: Cell<bool> = const { Cell::new(false) };
    }

    pub fn take() -> Ordering {
        if WEAK.get() { Ordering::Relaxed } else { Ordering::Acquire }
    }

    pub fn give_or_take() -> Ordering {
        if WEAK.get() { Ordering::Relaxed } else { Ordering::AcqRel }
    }
}

/// Room for everything a hook allocates, several times over.
pub const ARENA_BYTES: usize = 2 * 1024 * 1024;
/// Bigger allocations (a transcript's lines, a model's buffers) go to the system at once, so that
/// one of them cannot take the room the many small ones need.
const MAX_FROM_ARENA: usize = 256 * 1024;
/// The arena's own alignment; a layout asking for more goes to the system.
const ARENA_ALIGN: usize = 4096;

/// An allocator serving from `N` bytes of its own before it hands over to the system (see the
/// module doc); the product's `src/main.rs` makes one of [`ARENA_BYTES`] the global allocator.
#[repr(C, align(4096))]
pub struct Arena<const N: usize> {
    bytes: UnsafeCell<[u8; N]>,
    /// Offset of the first free byte: every live block of the arena ends at or below it. Moved
    /// down with release ordering, up with acquire (see the module doc).
    next: AtomicUsize,
}

impl<const N: usize> Default for Arena<N> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the bytes are only reached through the allocator's methods, which hand each range to
// one owner at a time (an atomic bump or step-back of `next` decides who owns it).
#[allow(unsafe_code, reason = "the arena's bytes are shared between threads by design")]
unsafe impl<const N: usize> Sync for Arena<N> {}

impl<const N: usize> Arena<N> {
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Arena { bytes: UnsafeCell::new([0; N]), next: AtomicUsize::new(0) }
    }

    /// Loom's atomics are made at run time, in the model.
    #[cfg(loom)]
    pub fn new() -> Self {
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
            match self.next.compare_exchange_weak(next, end, order::take(), Ordering::Relaxed) {
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
        new_end <= N && self.next.compare_exchange(old_end, new_end, order::give_or_take(), Ordering::Relaxed).is_ok()
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
#[cfg(not(loom))]
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
    /// relaxed); run here on x86, the test shows the block handed over whole, not the ordering,
    /// which the model check (`mod model`) checks.
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

/// The model check of the handover: loom runs each body under every interleaving of its threads,
/// and every value a load of `next` may see under the orderings the arena uses. Each thread writes
/// the blocks it gets through a loom cell per arena byte, so a block taken without a happens-before
/// edge from its last owner's writes (a handover ordered too weakly) fails the check, as does a
/// block handed to two threads at once. Run by scripts/test:
/// `RUSTFLAGS="--cfg loom" cargo test -p system1-arena --lib model`.
#[cfg(test)]
#[cfg(loom)]
#[allow(unsafe_code, reason = "the model calls the allocator's methods as std does, and writes through loom's cells")]
mod model {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    const N: usize = 64;

    /// The arena under test, and a loom cell standing for each of its bytes.
    struct Shared {
        arena: Arena<N>,
        bytes: Vec<loom::cell::UnsafeCell<u8>>,
    }

    // SAFETY: every access to the cells goes through loom, which checks that no two of them race;
    // the arena is Sync itself.
    unsafe impl Sync for Shared {}
    // SAFETY: as above.
    unsafe impl Send for Shared {}

    impl Shared {
        fn new() -> Arc<Self> {
            Arc::new(Shared { arena: Arena::new(), bytes: (0..N).map(|_| loom::cell::UnsafeCell::new(0)).collect() })
        }

        fn layout(size: usize) -> Layout {
            Layout::from_size_align(size, 8).expect("a layout")
        }

        /// A block of `size` bytes from the arena (the model's blocks always fit).
        fn alloc(&self, size: usize) -> *mut u8 {
            // SAFETY: a non-zero layout.
            let ptr = unsafe { self.arena.alloc(Self::layout(size)) };
            assert!(self.arena.offset(ptr).is_some(), "the model's blocks fit the arena");
            ptr
        }

        fn dealloc(&self, ptr: *mut u8, size: usize) {
            // SAFETY: `ptr` came from this arena with this layout, and is freed once.
            unsafe { self.arena.dealloc(ptr, Self::layout(size)) }
        }

        fn realloc(&self, ptr: *mut u8, size: usize, new_size: usize) -> *mut u8 {
            // SAFETY: as for `dealloc`; the new size is non-zero.
            let new = unsafe { self.arena.realloc(ptr, Self::layout(size), new_size) };
            assert!(self.arena.offset(new).is_some(), "the model's blocks fit the arena");
            new
        }

        /// Writes `value` over the `size` bytes at `ptr`, as the block's owner: loom records each.
        fn write(&self, ptr: *mut u8, size: usize, value: u8) {
            let start = self.arena.offset(ptr).expect("an arena block");
            for cell in &self.bytes[start..start + size] {
                // SAFETY: loom checks it (see above).
                cell.with_mut(|p| unsafe { *p = value });
            }
        }

        /// Whether the `size` bytes at `ptr` all read `value`.
        fn holds(&self, ptr: *mut u8, size: usize, value: u8) -> bool {
            let start = self.arena.offset(ptr).expect("an arena block");
            // SAFETY: loom checks it (see above).
            self.bytes[start..start + size].iter().all(|cell| cell.with(|p| unsafe { *p }) == value)
        }
    }

    /// Checks `body` under every interleaving. It runs on a model thread with a stack of its own:
    /// the arena is page-aligned, and building one overflows the small stack of loom's first thread.
    fn check(body: fn()) {
        loom::model(move || {
            let big = thread::Builder::new().stack_size(1 << 20).spawn(body).expect("a model thread");
            big.join().expect("the model thread");
        });
    }

    /// Another thread takes a block, writes it and frees it; this one takes one and writes it. When
    /// this one's block is the room the other gave back, its writes must come after the other's.
    fn freed_then_taken() {
        let s = Shared::new();
        let other = {
            let s = Arc::clone(&s);
            thread::spawn(move || {
                let p = s.alloc(16);
                s.write(p, 16, 1);
                assert!(s.holds(p, 16, 1), "nobody else wrote the block while it was held");
                s.dealloc(p, 16);
            })
        };
        let q = s.alloc(16);
        s.write(q, 16, 2);
        assert!(s.holds(q, 16, 2), "nobody else wrote the block while it was held");
        s.dealloc(q, 16);
        other.join().expect("the other thread");
    }

    #[test]
    fn a_block_freed_on_one_thread_is_taken_on_another_after_its_writes() {
        check(freed_then_taken);
    }

    /// The check notices a handover ordered too weakly: with `Relaxed` in place of the acquire and
    /// release, a taker's writes can race with the last owner's, and the model fails.
    #[test]
    #[should_panic(expected = "Causality violation")]
    fn a_relaxed_handover_fails_the_check() {
        order::WEAK.set(true);
        check(freed_then_taken);
    }

    /// A block shrunk in place gives its tail back: another thread that takes those bytes writes
    /// them after the shrinking thread did.
    #[test]
    fn the_tail_of_a_shrunk_block_is_taken_on_another_thread_after_its_writes() {
        check(|| {
            let s = Shared::new();
            let other = {
                let s = Arc::clone(&s);
                thread::spawn(move || {
                    let p = s.alloc(32);
                    s.write(p, 32, 1);
                    let p = s.realloc(p, 32, 8);
                    s.write(p, 8, 3);
                    assert!(s.holds(p, 8, 3));
                    s.dealloc(p, 8);
                })
            };
            let q = s.alloc(16);
            s.write(q, 16, 2);
            assert!(s.holds(q, 16, 2));
            s.dealloc(q, 16);
            other.join().expect("the other thread");
        });
    }

    /// The last block grows in place over bytes another thread has given back: its new bytes are
    /// written after the other thread's writes to them.
    #[test]
    fn a_block_grown_in_place_over_bytes_another_thread_freed_writes_them_after_it() {
        check(|| {
            let s = Shared::new();
            let a = s.alloc(8);
            s.write(a, 8, 2);
            let other = {
                let s = Arc::clone(&s);
                thread::spawn(move || {
                    let p = s.alloc(16);
                    s.write(p, 16, 1);
                    s.dealloc(p, 16);
                })
            };
            let a = s.realloc(a, 8, 32);
            s.write(a, 32, 2);
            assert!(s.holds(a, 32, 2));
            s.dealloc(a, 32);
            other.join().expect("the other thread");
        });
    }
}

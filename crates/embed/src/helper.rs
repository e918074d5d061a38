//! A second thread for the forward pass. A pass that finds the other core free takes a [`Lease`]
//! on one helper thread kept for the life of the process; [`Lease::join`] then runs one closure
//! on the calling thread and another on the helper, and returns when both are done. The pass
//! splits its large products by output columns this way (see `bert`), so a pass takes about half
//! the time, with every output value computed exactly as on one thread.
//!
//! The helper is started by the first pass that asks for it (a process that never runs the model
//! never has it). While leased it spins for a short while between jobs, since within a pass the
//! next product comes a few dozen microseconds later; otherwise it parks until it is handed one,
//! so an idle server, or one busy with several passes (which then keep to their own threads),
//! does not have it taking a core. There is one helper, held by one pass at a time.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
#[cfg(not(loom))]
use std::time::{Duration, Instant};

// The model check (`mod model` below, run by scripts/test with `--cfg loom`) runs this file's
// hand-off on loom's atomics, mutexes, threads and cells, which record every access and explore
// every interleaving and every reordering the orderings allow.
#[cfg(loom)]
use loom::{
    cell::UnsafeCell,
    sync::atomic::{AtomicBool, AtomicU8, Ordering},
    sync::{Arc, Mutex},
    thread::{self, Thread},
};
#[cfg(not(loom))]
use std::{
    sync::atomic::{AtomicBool, AtomicU8, Ordering},
    sync::{Arc, Mutex, OnceLock},
    thread::{self, Thread},
};

/// std's `UnsafeCell` with loom's access API, so that the same code runs in both builds.
#[cfg(not(loom))]
struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// How long the leased helper spins for its next job before it parks, and how long a caller
/// spins for the helper's half before it parks. Within a pass the gaps are shorter.
#[cfg(not(loom))]
const SPIN: Duration = Duration::from_micros(200);

/// The helper's state: no job; a job waiting to be claimed; being run; finished.
const IDLE: u8 = 0;
const POSTED: u8 = 1;
const RUNNING: u8 = 2;
const DONE: u8 = 3;

/// The caller's closure, type-erased: a pointer to the cell holding the `Option<B>` on the
/// caller's stack and the function that takes it out and runs it.
struct Job {
    slot: *mut (),
    run: unsafe fn(*mut ()),
    caller: Thread,
}

// SAFETY: the closure behind `slot` is `Send` (join's bound), so running it on the helper is what
// `Send` allows; the pointer stays valid while the helper may use it, because `join` does not
// return (or unwind) before the helper has marked a job it claimed done, and a job taken back
// before it was claimed is never run by the helper.
#[allow(unsafe_code)]
unsafe impl Send for Job {}

struct Shared {
    state: AtomicU8,
    /// Whether a pass holds the lease: the helper spins between jobs only then.
    leased: AtomicBool,
    job: Mutex<Option<Job>>,
    /// The panic of the helper's half, handed back to the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

struct Helper {
    shared: Arc<Shared>,
    thread: Thread,
}

/// The helper, started on first use; `None` on a machine with one core, or when no thread could
/// be started.
#[cfg(not(loom))]
fn helper() -> Option<&'static Helper> {
    static HELPER: OnceLock<Option<Helper>> = OnceLock::new();
    HELPER
        .get_or_init(|| {
            if thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
                return None;
            }
            let shared = Arc::new(Shared::new());
            let theirs = Arc::clone(&shared);
            let handle = thread::Builder::new().name("local-helper".into()).spawn(move || serve(&theirs)).ok()?;
            Some(Helper { shared, thread: handle.thread().clone() })
        })
        .as_ref()
}

/// Under the model check there is no process-wide helper: its model starts its own.
#[cfg(loom)]
fn helper() -> Option<&'static Helper> {
    None
}

impl Shared {
    fn new() -> Shared {
        Shared {
            state: AtomicU8::new(IDLE),
            leased: AtomicBool::new(false),
            job: Mutex::new(None),
            panic: Mutex::new(None),
        }
    }
}

/// The helper, held by one pass until dropped.
pub struct Lease {
    h: &'static Helper,
}

/// The helper for this pass; `None` when another pass holds it, or there is none.
pub fn lease() -> Option<Lease> {
    let h = helper()?;
    h.shared.leased.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).ok()?;
    Some(Lease { h })
}

impl Drop for Lease {
    fn drop(&mut self) {
        // The helper stops spinning and parks (no job is in hand: join has returned).
        self.h.shared.leased.store(false, Ordering::Release);
    }
}

impl Lease {
    /// Runs `a` here and `b` on the helper, and returns when both have finished. When the helper
    /// has not started on `b` by the time `a` is done (it was not given a core: a busy machine),
    /// `b` is taken back and run here, so a split product is never slower than on one thread by
    /// more than a wake-up's worth. A panic in either is raised here, after both have finished.
    pub fn join<A: FnOnce(), B: FnOnce() + Send>(&self, a: A, b: B) {
        join(&self.h.shared, &self.h.thread, a, b);
    }
}

/// [`Lease::join`] on the helper `thread` that serves `s`.
fn join<A: FnOnce(), B: FnOnce() + Send>(s: &Shared, helper: &Thread, a: A, b: B) {
    let slot = UnsafeCell::new(Some(b));
    let job = Job { slot: (&raw const slot).cast_mut().cast(), run: run::<B>, caller: thread::current() };
    if let Ok(mut j) = s.job.lock() {
        *j = Some(job);
    }
    s.state.store(POSTED, Ordering::Release);
    wake(helper);
    let mine = catch_unwind(AssertUnwindSafe(a));
    let theirs = if s.state.compare_exchange(POSTED, IDLE, Ordering::Acquire, Ordering::Acquire).is_ok() {
        // Taken back before the helper claimed it: the helper never touches the slot.
        if let Ok(mut j) = s.job.lock() {
            *j = None;
        }
        // SAFETY: the helper did not claim the job, and no longer can (the state is IDLE), so
        // nothing else touches the slot.
        #[allow(unsafe_code)]
        let b = slot.with_mut(|p| unsafe { (*p).take() });
        b.and_then(|b| catch_unwind(AssertUnwindSafe(b)).err())
    } else {
        // `slot` must outlive the helper's use of it, whatever happened to `a`.
        wait_for(|| s.state.load(Ordering::Acquire) == DONE, || true);
        s.state.store(IDLE, Ordering::Relaxed);
        s.panic.lock().ok().and_then(|mut p| p.take())
    };
    if let Err(p) = mine {
        resume_unwind(p);
    }
    if let Some(p) = theirs {
        resume_unwind(p);
    }
}

/// Takes the closure out of its slot and runs it.
///
/// # Safety
/// `slot` points to a live `UnsafeCell<Option<B>>` whose contents nothing else touches while this
/// runs.
#[allow(unsafe_code)]
unsafe fn run<B: FnOnce()>(slot: *mut ()) {
    // SAFETY: the caller's contract above.
    let slot = unsafe { &*slot.cast::<UnsafeCell<Option<B>>>() };
    // SAFETY: as above, nothing else touches the `Option<B>` meanwhile.
    if let Some(b) = slot.with_mut(|p| unsafe { (*p).take() }) {
        b();
    }
}

/// Waits until `done()`: spinning for up to [`SPIN`] while `spin()` holds, then parked (the other
/// side unparks this thread after its store; a spurious wake-up only goes round again).
#[cfg(not(loom))]
fn wait_for(done: impl Fn() -> bool, spin: impl Fn() -> bool) {
    let start = Instant::now();
    let mut n = 0u32;
    while !done() {
        n = n.wrapping_add(1);
        // The clock read costs more than the check; look at it now and then.
        if !spin() || (n.is_multiple_of(64) && start.elapsed() > SPIN) {
            while !done() {
                thread::park();
            }
            return;
        }
        std::hint::spin_loop();
    }
}

/// Under the model check: yields until `done()`. Not parked, since loom's `unpark` hands the
/// unparker's view of memory to the other thread whether or not it parks (std promises that only
/// to a `park` it wakes), which would hide a store that lacks its `Release`; see [`wake`].
#[cfg(loom)]
fn wait_for(done: impl Fn() -> bool, _spin: impl Fn() -> bool) {
    while !done() {
        thread::yield_now();
    }
}

/// Wakes `t` from its park after a store it waits for.
#[cfg(not(loom))]
fn wake(t: &Thread) {
    t.unpark();
}

/// Under the model check nothing parks (see the loom `wait_for`), so there is nothing to wake.
#[cfg(loom)]
fn wake(_t: &Thread) {}

/// The helper's loop: each posted job claimed (unless its caller took it back first) and run, its
/// panic kept for the caller, and the caller woken.
#[cfg(not(loom))]
fn serve(s: &Shared) {
    loop {
        wait_for(|| s.state.load(Ordering::Acquire) == POSTED, || s.leased.load(Ordering::Relaxed));
        serve_one(s);
    }
}

/// Claims the posted job, unless its caller took it back first, runs it, keeps its panic for the
/// caller and wakes the caller. Whether it ran one.
fn serve_one(s: &Shared) -> bool {
    if s.state.compare_exchange(POSTED, RUNNING, Ordering::Acquire, Ordering::Relaxed).is_err() {
        return false;
    }
    let Some(job) = s.job.lock().ok().and_then(|mut j| j.take()) else {
        // Not reachable (a job is in place before POSTED is stored); the caller waits for DONE.
        s.state.store(DONE, Ordering::Release);
        return false;
    };
    // SAFETY: `join` put the slot there and, the job being claimed, waits for DONE before it
    // lets the slot go.
    #[allow(unsafe_code)]
    let result = catch_unwind(AssertUnwindSafe(|| unsafe { (job.run)(job.slot) }));
    if let Err(p) = result
        && let Ok(mut slot) = s.panic.lock()
    {
        *slot = Some(p);
    }
    s.state.store(DONE, Ordering::Release);
    wake(&job.caller);
    true
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The tests share the one helper: each takes the lease, waiting for it if another test has it.
    fn take() -> Lease {
        loop {
            if let Some(l) = lease() {
                return l;
            }
            assert!(helper().is_some(), "no helper on this machine");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn both_halves_run_and_see_their_own_data() {
        if helper().is_none() {
            return;
        }
        let lease = take();
        let (mut left, mut right) = (vec![0u64; 1000], vec![0u64; 1000]);
        for round in 0..200u64 {
            lease.join(
                || left.iter_mut().enumerate().for_each(|(i, v)| *v += i as u64 + round),
                || right.iter_mut().enumerate().for_each(|(i, v)| *v += 2 * i as u64 + round),
            );
        }
        let sum = (0..200u64).sum::<u64>();
        assert!(left.iter().enumerate().all(|(i, v)| *v == 200 * i as u64 + sum));
        assert!(right.iter().enumerate().all(|(i, v)| *v == 400 * i as u64 + sum));
    }

    #[test]
    fn one_lease_at_a_time() {
        if helper().is_none() {
            return;
        }
        let lease = take();
        assert!(super::lease().is_none());
        drop(lease);
        // Another test may take it in between; only its being free again matters.
        let _again = take();
    }

    #[test]
    fn a_panic_on_either_side_reaches_the_caller_and_the_helper_stays_usable() {
        if helper().is_none() {
            return;
        }
        let lease = take();
        for side in 0..2 {
            let r = catch_unwind(AssertUnwindSafe(|| {
                lease.join(|| assert!(side != 0, "left"), || assert!(side != 1, "right"))
            }));
            assert!(r.is_err(), "side {side}");
        }
        let mut ran = false;
        lease.join(|| {}, || ran = true);
        assert!(ran);
    }
}

/// The model check of the hand-off: loom runs each test body under every interleaving of its
/// threads (and every value a load may see under the orderings used), with the helper's side run
/// by [`serve_one`] on a thread of the model's own. The closures write through loom cells, so a
/// write of the helper's that the caller could read without a happens-before edge (an ordering too
/// weak) fails the check, as does a slot touched by both sides, a deadlock, or a lost wake-up.
/// Run by scripts/test: `RUSTFLAGS="--cfg loom" cargo test -p system1-embed --lib helper::model`.
/// The helper's spinning and parking are not in the model (see the loom `wait_for`), nor is the
/// process-wide helper and its lease, which are plain std code around this hand-off.
#[cfg(all(test, loom))]
#[allow(unsafe_code, reason = "the model reaches its cells through loom's raw pointers, which is what it checks")]
mod model {
    use super::*;

    /// A number the two sides of a join may both reach: loom's cell records each access, and the
    /// model fails when two of them are not ordered by a happens-before edge. Shared for that.
    struct Cell(UnsafeCell<u64>);

    // SAFETY: every access goes through loom's cell, which checks that no two of them race.
    unsafe impl Sync for Cell {}

    impl Cell {
        fn add(&self, n: u64) {
            // SAFETY: loom checks it (see above).
            self.0.with_mut(|p| unsafe { *p += n });
        }

        fn get(&self) -> u64 {
            // SAFETY: loom checks it (see above).
            self.0.with_mut(|p| unsafe { *p })
        }
    }

    /// The helper's side: serves jobs until the caller says it is finished. Its waiting is
    /// modelled by loom's yield, which lets every other step of the caller's come first.
    fn helper_thread(s: Arc<Shared>, finished: Arc<AtomicBool>) -> loom::thread::JoinHandle<()> {
        thread::spawn(move || {
            while !finished.load(Ordering::Acquire) {
                if !serve_one(&s) {
                    thread::yield_now();
                }
            }
        })
    }

    /// Runs `f` under every interleaving with at most three preemptions (a thread stopped where
    /// it could have gone on): the bound keeps the three models under a second, where an unbounded
    /// search of two joins ran for minutes. A `Relaxed` in place of the `Release` that publishes
    /// DONE, or of the `Acquire` that reads it, fails the first two models within that bound.
    fn check(f: impl Fn() + Send + Sync + 'static) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(f);
    }

    /// `rounds` joins in a row; each side adds to its own cell, read after each join.
    fn joins(rounds: u64) {
        check(move || {
            let s = Arc::new(Shared::new());
            let finished = Arc::new(AtomicBool::new(false));
            let theirs = helper_thread(Arc::clone(&s), Arc::clone(&finished));
            let helper = theirs.thread().clone();
            let (left, right) = (Cell(UnsafeCell::new(0)), Cell(UnsafeCell::new(0)));
            for round in 1..=rounds {
                join(&s, &helper, || left.add(1), || right.add(10));
                assert_eq!((left.get(), right.get()), (round, 10 * round));
                assert_eq!(s.state.load(Ordering::Relaxed), IDLE);
            }
            finished.store(true, Ordering::Release);
            theirs.join().unwrap();
        });
    }

    #[test]
    fn one_join_hands_off_or_takes_back_without_a_race() {
        joins(1);
    }

    #[test]
    fn the_next_join_after_one_finds_the_hand_off_reset() {
        joins(2);
    }

    #[test]
    fn a_panic_on_the_helper_reaches_the_caller_after_both_halves() {
        check(|| {
            let s = Arc::new(Shared::new());
            let finished = Arc::new(AtomicBool::new(false));
            let theirs = helper_thread(Arc::clone(&s), Arc::clone(&finished));
            let helper = theirs.thread().clone();
            let left = Cell(UnsafeCell::new(0));
            let r =
                catch_unwind(AssertUnwindSafe(|| join(&s, &helper, || left.add(1), || std::panic::panic_any("right"))));
            assert!(r.is_err(), "the helper's panic is raised in the caller");
            assert_eq!(left.get(), 1, "the caller's half ran");
            finished.store(true, Ordering::Release);
            theirs.join().unwrap();
        });
    }
}

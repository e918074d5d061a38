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
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long the leased helper spins for its next job before it parks, and how long a caller
/// spins for the helper's half before it parks. Within a pass the gaps are shorter.
const SPIN: Duration = Duration::from_micros(200);

/// The helper's state: no job; a job waiting to be claimed; being run; finished.
const IDLE: u8 = 0;
const POSTED: u8 = 1;
const RUNNING: u8 = 2;
const DONE: u8 = 3;

/// The caller's closure, type-erased: a pointer to the `Option<B>` on the caller's stack and the
/// function that takes it out and runs it.
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
fn helper() -> Option<&'static Helper> {
    static HELPER: OnceLock<Option<Helper>> = OnceLock::new();
    HELPER
        .get_or_init(|| {
            if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
                return None;
            }
            let shared = Arc::new(Shared {
                state: AtomicU8::new(IDLE),
                leased: AtomicBool::new(false),
                job: Mutex::new(None),
                panic: Mutex::new(None),
            });
            let theirs = Arc::clone(&shared);
            let handle = std::thread::Builder::new().name("local-helper".into()).spawn(move || serve(&theirs)).ok()?;
            Some(Helper { shared, thread: handle.thread().clone() })
        })
        .as_ref()
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
        let s = &self.h.shared;
        let mut slot = Some(b);
        let job = Job { slot: (&raw mut slot).cast(), run: run::<B>, caller: std::thread::current() };
        if let Ok(mut j) = s.job.lock() {
            *j = Some(job);
        }
        s.state.store(POSTED, Ordering::Release);
        self.h.thread.unpark();
        let mine = catch_unwind(AssertUnwindSafe(a));
        let theirs = if s.state.compare_exchange(POSTED, IDLE, Ordering::Acquire, Ordering::Acquire).is_ok() {
            // Taken back before the helper claimed it: the helper never touches the slot.
            if let Ok(mut j) = s.job.lock() {
                *j = None;
            }
            slot.take().and_then(|b| catch_unwind(AssertUnwindSafe(b)).err())
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
}

/// Takes the closure out of its slot and runs it.
///
/// # Safety
/// `slot` points to a live `Option<B>` that nothing else touches while this runs.
#[allow(unsafe_code)]
unsafe fn run<B: FnOnce()>(slot: *mut ()) {
    // SAFETY: the caller's contract above.
    if let Some(b) = unsafe { (*slot.cast::<Option<B>>()).take() } {
        b();
    }
}

/// Waits until `done()`: spinning for up to [`SPIN`] while `spin()` holds, then parked (the other
/// side unparks this thread after its store; a spurious wake-up only goes round again).
fn wait_for(done: impl Fn() -> bool, spin: impl Fn() -> bool) {
    let start = Instant::now();
    let mut n = 0u32;
    while !done() {
        n = n.wrapping_add(1);
        // The clock read costs more than the check; look at it now and then.
        if !spin() || (n.is_multiple_of(64) && start.elapsed() > SPIN) {
            while !done() {
                std::thread::park();
            }
            return;
        }
        std::hint::spin_loop();
    }
}

/// The helper's loop: each posted job claimed (unless its caller took it back first) and run, its
/// panic kept for the caller, and the caller woken.
fn serve(s: &Shared) {
    loop {
        wait_for(|| s.state.load(Ordering::Acquire) == POSTED, || s.leased.load(Ordering::Relaxed));
        if s.state.compare_exchange(POSTED, RUNNING, Ordering::Acquire, Ordering::Relaxed).is_err() {
            continue;
        }
        let Some(job) = s.job.lock().ok().and_then(|mut j| j.take()) else {
            // Not reachable (a job is in place before POSTED is stored); the caller waits for DONE.
            s.state.store(DONE, Ordering::Release);
            continue;
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
        job.caller.unpark();
    }
}

#[cfg(test)]
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

//! Handing the other blocks of a split CPU product to helper threads, and getting them
//! back, without a scheduler wake-up on either side when the helpers are free.
//!
//! The helpers are a rayon pool of cores − 1 threads of our own (the calling thread
//! computes the first block). After a product whose helpers all started before the
//! caller finished its own block, each helper lingers: it spins, for at most
//! [`LINGER`], until the next product hands work out, instead of going to sleep; and
//! the calling thread, once its own block is done, spins while every helper is running
//! instead of sleeping on rayon's latch (for at most [`SPIN`]). When a helper has not even
//! started (the other cores are busy elsewhere) the caller blocks, which leaves its core
//! free for the helper.
//!
//! Why: measured on the project's 2-core Intel VM at n = 256 (0.1 ms per half product),
//! with other builds running (load 3–5), a sleeping pool thread started its block a
//! median 110–130 µs after it was handed over — often only once the calling thread had
//! finished its own half, so two threads took about as long as one (block medians
//! 0.19–0.26 ms against 0.20–0.23). A lingering helper started in 2–14 µs, and the
//! product took 0.11–0.12 ms; numpy, whose OpenBLAS threads spin between calls for far
//! longer, took 0.15–0.17 ms in the same minutes. Spinning also while a helper had not
//! started was worse: when the scheduler had queued the helper behind the spinning
//! caller, the helper ran only after the spin gave up (1.1 ms, with a 1 ms bound). The
//! cost of lingering is at most [`LINGER`] of each helper's time after a product that
//! used every core (products that large take ≥ 0.1 ms).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a helper spins after a product, waiting for the next one.
const LINGER: Duration = Duration::from_micros(200);

/// How long the calling thread spins for running helpers: a lingering helper started
/// its block 2–14 µs after the hand-off (median, n = 256), and the wake-up that the spin
/// saves cost 6–20 µs (an empty `rayon::join`) to 110 µs on the busy VM. A bound chosen,
/// not measured: long enough for a helper that started a few µs late, short enough not
/// to burn a core waiting for one that was preempted halfway through a large block.
const SPIN: Duration = Duration::from_micros(50);

/// Counts hand-offs: a lingering helper stops when it changes.
static HANDOFFS: AtomicU64 = AtomicU64::new(0);

/// The helper threads: cores − 1 of them (at least one).
pub(super) fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores.saturating_sub(1).max(1))
            .thread_name(|i| format!("gpulab-gemm-{i}"))
            .build()
            .expect("a thread pool for CPU products")
    })
}

/// One split product's helpers: how many there are, how many started and finished.
pub(super) struct Team {
    helpers: usize,
    started: AtomicUsize,
    done: AtomicUsize,
}

impl Team {
    /// A team of `helpers` blocks handed to the pool.
    pub(super) fn new(helpers: usize) -> Self {
        Self {
            helpers,
            started: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
        }
    }

    /// Runs one handed-off block on a helper, counted.
    pub(super) fn help(&self, block: impl FnOnce()) {
        self.started.fetch_add(1, Ordering::AcqRel);
        block();
        self.done.fetch_add(1, Ordering::AcqRel);
    }

    /// Called once every block is in the pool's queue: releases the helpers lingering
    /// after the last product, so they take the blocks at once.
    pub(super) fn handed_off(&self) {
        HANDOFFS.fetch_add(1, Ordering::AcqRel);
    }

    /// Called by the calling thread after its own block. When every helper is running,
    /// queues a linger for each, behind the blocks, so that none goes to sleep right
    /// after this product, and waits for them by spinning, for at most [`SPIN`]: they
    /// started at most a few µs after this thread and have as much to do, so they are
    /// usually done within that; if not, spinning longer would cost more than the
    /// wake-up it saves. When one has not even started, the scheduler has probably
    /// queued it behind this thread, on this core: then it neither spins nor lingers
    /// (a lingering helper there would take this thread's time, and one that sleeps is
    /// placed afresh when woken), and rayon's scope blocks, which leaves the core to the
    /// helper. Returns whether every helper was running.
    pub(super) fn wait_for_helpers(&self) -> bool {
        if self.started.load(Ordering::Acquire) < self.helpers {
            return false;
        }
        let handoff = HANDOFFS.load(Ordering::Acquire);
        for _ in 0..self.helpers {
            pool().spawn(move || {
                linger(handoff);
            });
        }
        let spinning = Instant::now();
        while self.done.load(Ordering::Acquire) < self.helpers && spinning.elapsed() < SPIN {
            std::hint::spin_loop();
        }
        true
    }
}

/// Spins until the next hand-off after `handoff`, or for [`LINGER`]; true when a hand-off
/// ended it.
fn linger(handoff: u64) -> bool {
    let start = Instant::now();
    loop {
        if HANDOFFS.load(Ordering::Acquire) != handoff {
            return true;
        }
        if start.elapsed() >= LINGER {
            return false;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_leaves_one_core_to_the_caller() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(pool().current_num_threads(), cores.saturating_sub(1).max(1));
    }

    #[test]
    fn the_caller_spins_only_while_every_helper_runs_and_not_for_long() {
        let team = Team::new(1);
        assert!(!team.wait_for_helpers(), "no helper started: no spin");
        let release = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                team.help(|| {
                    while !release.load(Ordering::Acquire) {
                        std::hint::spin_loop();
                    }
                })
            });
            while team.started.load(Ordering::Acquire) == 0 {
                std::hint::spin_loop();
            }
            // The helper runs until released: the caller spins, then gives up.
            let start = Instant::now();
            assert!(team.wait_for_helpers());
            let spun = start.elapsed();
            release.store(true, Ordering::Release);
            assert!(spun >= SPIN, "spun only {spun:?}");
            // Bounded, not fast: the helper never finishes until released, so an
            // unbounded spin would never get here; the bound is wide because a loaded
            // 2-core box may deschedule this thread for tens of milliseconds mid-spin.
            assert!(spun < Duration::from_secs(5), "spun {spun:?}");
        });
        assert_eq!(team.done.load(Ordering::Acquire), 1);
    }

    #[test]
    fn a_linger_ends_at_the_next_handoff() {
        // A linger for a past hand-off ends because of it, not by running out of time
        // (no clock in the assertion: a busy box may preempt this thread anywhere).
        let now = HANDOFFS.load(Ordering::Acquire);
        assert!(linger(now.wrapping_sub(1)), "a stale linger ends at once");
        Team::new(0).handed_off();
        assert!(HANDOFFS.load(Ordering::Acquire) > now);
        // With no hand-off to end it (other tests' products may bring one), a linger
        // gives up after its bound, not before.
        let start = Instant::now();
        if !linger(HANDOFFS.load(Ordering::Acquire)) {
            assert!(start.elapsed() >= LINGER);
        }
    }
}

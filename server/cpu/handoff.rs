//! Handing the other blocks of a split CPU product to helper threads, and getting them
//! back, without a scheduler wake-up on either side when the helpers are free.
//!
//! The helpers are a rayon pool of cores − 1 threads of our own (the calling thread
//! computes the first block). After a product each helper lingers: it spins, for at most
//! [`LINGER`], until the next product hands work out, instead of going to sleep; and
//! the calling thread, once its own block is done, spins while every helper is running
//! instead of sleeping on rayon's latch (for a bounded time). When a helper has not even
//! started (the other cores are busy elsewhere) the caller blocks, which leaves its core
//! free for the helper.
//!
//! Why: measured on the project's 2-core Intel VM at n = 256 (0.1 ms per half product),
//! with other builds running (load 3–5), a sleeping pool thread started its block a
//! median 110–130 µs after it was handed over — often only once the calling thread had
//! finished its own half, so two threads took longer (0.24 ms) than one (0.21 ms). A
//! lingering helper started in 3–13 µs, and the product took 0.11–0.13 ms; numpy, whose
//! OpenBLAS threads spin between calls for far longer, took 0.15–0.17 ms in the same
//! minutes. Spinning also while a helper had not started was worse: when the scheduler
//! had queued the helper behind the spinning caller, the helper ran only after the
//! spin gave up (1.1 ms, with a 1 ms bound). The cost of lingering is at most [`LINGER`] of each helper's
//! time after a product that used every core (products that small take ≥ 0.1 ms).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a helper spins after a product, waiting for the next one.
const LINGER: Duration = Duration::from_micros(200);

/// How late a lingering helper may start its block: 2–13 µs measured (median, n = 256).
const HANDOFF: Duration = Duration::from_micros(20);

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

/// One split product's helpers: how many there are, how many started and finished, and
/// since when.
pub(super) struct Team {
    helpers: usize,
    started: AtomicUsize,
    done: AtomicUsize,
    since: Instant,
}

impl Team {
    /// A team of `helpers` blocks handed to the pool.
    pub(super) fn new(helpers: usize) -> Self {
        Self {
            helpers,
            started: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            since: Instant::now(),
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

    /// Called by the calling thread after its own block. First queues a linger for each
    /// helper, behind the blocks, so that none goes to sleep right after this product.
    /// Then, while every helper is running, waits for them by spinning, for at most as
    /// long as its own block took (theirs are the same size) plus [`HANDOFF`]; when one
    /// has not started (the scheduler may have queued it behind this thread), it returns
    /// at once and rayon's scope blocks, which leaves this core to the helper.
    pub(super) fn wait_for_helpers(&self) {
        let handoff = HANDOFFS.load(Ordering::Acquire);
        for _ in 0..self.helpers {
            pool().spawn(move || linger(handoff));
        }
        let bound = self.since.elapsed() + HANDOFF;
        let spinning = Instant::now();
        while self.started.load(Ordering::Acquire) == self.helpers
            && self.done.load(Ordering::Acquire) < self.helpers
            && spinning.elapsed() < bound
        {
            std::hint::spin_loop();
        }
    }
}

/// Spins until the next hand-off after `handoff`, or for [`LINGER`].
fn linger(handoff: u64) {
    let start = Instant::now();
    while HANDOFFS.load(Ordering::Acquire) == handoff && start.elapsed() < LINGER {
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
    fn the_caller_spins_only_while_every_helper_runs() {
        let team = Team::new(1);
        // The caller's own block: 100 ms, so a spin may last that long.
        std::thread::sleep(Duration::from_millis(100));
        let start = Instant::now();
        team.wait_for_helpers();
        assert!(
            start.elapsed() < Duration::from_millis(50),
            "no helper started"
        );
        std::thread::scope(|s| {
            s.spawn(|| team.help(|| std::thread::sleep(Duration::from_millis(10))));
            while team.started.load(Ordering::Acquire) == 0 {
                std::hint::spin_loop();
            }
            team.wait_for_helpers();
            assert_eq!(
                team.done.load(Ordering::Acquire),
                1,
                "spun until it finished"
            );
        });
    }

    #[test]
    fn a_linger_ends_at_the_next_handoff() {
        let now = HANDOFFS.load(Ordering::Acquire);
        let start = Instant::now();
        linger(now.wrapping_sub(1));
        let stale = start.elapsed();
        assert!(
            stale < LINGER,
            "a linger for a past hand-off spun {stale:?}"
        );
        Team::new(0).handed_off();
        assert!(HANDOFFS.load(Ordering::Acquire) > now);
    }
}

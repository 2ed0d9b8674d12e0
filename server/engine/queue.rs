//! The experiment queue: a bounded FIFO in front of the worker thread(s) that own the
//! compute backend. By default one worker runs jobs one at a time, so no measurement ever
//! shares the GPU with another experiment. A full queue refuses new jobs (the route
//! answers 429 with Retry-After); a waiting job knows its position; finished jobs are
//! kept for polling and pruned oldest-first. Each job records its owner (the student
//! cookie), so the instructor sees GPU use per student from the server's own records,
//! and the queue counts outcomes for `/metrics`. On shutdown the queue closes: new jobs
//! are refused, waiting ones fail with a message, and the caller waits for running ones.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

/// Finished jobs kept for polling before the oldest are forgotten.
pub const KEEP_FINISHED: usize = 1000;

/// Where a job stands.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum JobState {
    /// Waiting; `position` 1 runs next.
    Queued {
        /// 1-based place in the queue.
        position: usize,
    },
    /// On the device now.
    Running,
    /// Finished with a result.
    Done {
        /// The experiment's result, with its provenance.
        result: serde_json::Value,
    },
    /// Finished with an error a student can read.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// Why a job was not accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// The queue is full; try again after this many seconds.
    Full {
        /// Suggested wait before trying again, in seconds.
        retry_after_secs: u64,
    },
    /// The server is shutting down.
    Closed,
}

/// One student's use of the experiment worker, from the queue's own records.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OwnerUsage {
    /// Jobs submitted (including refused ones).
    pub submitted: u64,
    /// Jobs refused because the queue was full.
    pub rejected: u64,
    /// Jobs that finished with a result.
    pub done: u64,
    /// Jobs that failed.
    pub failed: u64,
    /// Seconds the worker spent on this student's jobs.
    pub busy_secs: f64,
    /// Seconds this student's jobs waited in the queue, in total.
    pub wait_secs: f64,
}

/// Queue-wide figures for `/metrics` and the instructor's view.
#[derive(Debug, Clone, Default, Serialize)]
pub struct QueueStats {
    /// Jobs waiting now.
    pub depth: usize,
    /// Jobs running now.
    pub running: usize,
    /// Most jobs ever running at once.
    pub running_peak: usize,
    /// Jobs finished with a result.
    pub done: u64,
    /// Jobs failed (errors, time limits, shutdown).
    pub failed: u64,
    /// Jobs refused because the queue was full.
    pub rejected: u64,
    /// Moving average of a job's run time, in seconds.
    pub average_run_secs: f64,
}

struct Entry<J> {
    job: Option<J>,
    state: JobState,
    owner: String,
    queued_at: Instant,
}

struct Inner<J> {
    next_id: u64,
    pending: VecDeque<u64>,
    entries: HashMap<u64, Entry<J>>,
    finished: VecDeque<u64>,
    closed: bool,
    stats: QueueStats,
    owners: HashMap<String, OwnerUsage>,
}

/// A bounded queue of jobs of type `J`, shared between handlers and the worker(s).
pub struct Queue<J> {
    inner: Mutex<Inner<J>>,
    wake: Condvar,
    idle: Condvar,
    capacity: usize,
}

impl<J> Queue<J> {
    /// A queue holding at most `capacity` waiting jobs.
    pub fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
                next_id: 1,
                pending: VecDeque::new(),
                entries: HashMap::new(),
                finished: VecDeque::new(),
                closed: false,
                stats: QueueStats {
                    average_run_secs: 2.0,
                    ..QueueStats::default()
                },
                owners: HashMap::new(),
            }),
            wake: Condvar::new(),
            idle: Condvar::new(),
            capacity: capacity.max(1),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<J>> {
        // A panic while holding the lock cannot leave the queue half-updated in a way
        // that matters more than refusing every later request would.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds `job` for `owner`; returns its id and 1-based position.
    pub fn submit(&self, owner: &str, job: J) -> Result<(u64, usize), Refused> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(Refused::Closed);
        }
        inner.owners.entry(owner.to_string()).or_default().submitted += 1;
        if inner.pending.len() >= self.capacity {
            let retry = (inner.stats.average_run_secs * inner.pending.len() as f64)
                .ceil()
                .max(1.0) as u64;
            inner.stats.rejected += 1;
            inner.owners.entry(owner.to_string()).or_default().rejected += 1;
            return Err(Refused::Full {
                retry_after_secs: retry,
            });
        }
        let id = inner.next_id;
        inner.next_id += 1;
        inner.pending.push_back(id);
        let position = inner.pending.len();
        inner.entries.insert(
            id,
            Entry {
                job: Some(job),
                state: JobState::Queued { position },
                owner: owner.to_string(),
                queued_at: Instant::now(),
            },
        );
        drop(inner);
        self.wake.notify_one();
        Ok((id, position))
    }

    /// The state of job `id`, with its current position if it is still waiting.
    pub fn state(&self, id: u64) -> Option<JobState> {
        let inner = self.lock();
        let entry = inner.entries.get(&id)?;
        Some(match entry.state {
            JobState::Queued { .. } => JobState::Queued {
                position: inner
                    .pending
                    .iter()
                    .position(|p| *p == id)
                    .map_or(1, |p| p + 1),
            },
            ref other => other.clone(),
        })
    }

    /// Jobs waiting now.
    pub fn depth(&self) -> usize {
        self.lock().pending.len()
    }

    /// Queue-wide figures.
    pub fn stats(&self) -> QueueStats {
        let inner = self.lock();
        QueueStats {
            depth: inner.pending.len(),
            ..inner.stats.clone()
        }
    }

    /// Per-owner usage, busiest first.
    pub fn usage(&self) -> Vec<(String, OwnerUsage)> {
        let mut rows: Vec<_> = self
            .lock()
            .owners
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        rows.sort_by(|a, b| b.1.busy_secs.total_cmp(&a.1.busy_secs).then(a.0.cmp(&b.0)));
        rows
    }

    /// Estimated wait for a new job, in seconds.
    pub fn estimated_wait_secs(&self) -> f64 {
        let inner = self.lock();
        inner.stats.average_run_secs * (inner.pending.len() + inner.stats.running) as f64
    }

    /// Blocks until a job is waiting and takes it, marking it running; `None` once the
    /// queue is closed.
    pub fn next(&self) -> Option<(u64, J)> {
        let mut inner = self.lock();
        loop {
            if inner.closed {
                return None;
            }
            if let Some(id) = inner.pending.pop_front() {
                let waited = inner.entries.get_mut(&id).and_then(|entry| {
                    entry.state = JobState::Running;
                    let job = entry.job.take()?;
                    Some((job, entry.owner.clone(), entry.queued_at.elapsed()))
                });
                if let Some((job, owner, waited)) = waited {
                    inner.stats.running += 1;
                    inner.stats.running_peak = inner.stats.running_peak.max(inner.stats.running);
                    inner.owners.entry(owner).or_default().wait_secs += waited.as_secs_f64();
                    return Some((id, job));
                }
                continue;
            }
            inner = self
                .wake
                .wait(inner)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Records the outcome of job `id`, which ran for `ran_for`.
    pub fn finish(&self, id: u64, state: JobState, ran_for: Duration) {
        let mut inner = self.lock();
        let secs = ran_for.as_secs_f64();
        inner.stats.average_run_secs = 0.8 * inner.stats.average_run_secs + 0.2 * secs;
        inner.stats.running = inner.stats.running.saturating_sub(1);
        let failed = matches!(state, JobState::Failed { .. });
        if failed {
            inner.stats.failed += 1;
        } else {
            inner.stats.done += 1;
        }
        let owner = inner.entries.get_mut(&id).map(|entry| {
            entry.state = state;
            entry.owner.clone()
        });
        if let Some(owner) = owner {
            let usage = inner.owners.entry(owner).or_default();
            usage.busy_secs += secs;
            if failed {
                usage.failed += 1;
            } else {
                usage.done += 1;
            }
        }
        inner.finished.push_back(id);
        while inner.finished.len() > KEEP_FINISHED {
            if let Some(old) = inner.finished.pop_front() {
                inner.entries.remove(&old);
            }
        }
        drop(inner);
        self.idle.notify_all();
    }

    /// Stops taking jobs: later submissions are refused, waiting jobs fail with
    /// `message`, and idle workers stop.
    pub fn close(&self, message: &str) {
        let mut inner = self.lock();
        inner.closed = true;
        let waiting: Vec<u64> = inner.pending.drain(..).collect();
        for id in waiting {
            if let Some(entry) = inner.entries.get_mut(&id) {
                entry.state = JobState::Failed {
                    error: message.to_string(),
                };
                entry.job = None;
            }
            inner.stats.failed += 1;
            inner.finished.push_back(id);
        }
        drop(inner);
        self.wake.notify_all();
    }

    /// Waits until no job is running or `timeout` passes; true when idle.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut inner = self.lock();
        while inner.stats.running > 0 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            inner = self
                .idle
                .wait_timeout(inner, deadline - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        true
    }
}

/// Runs jobs from `queue` on a new thread, one at a time, until the queue closes. A job
/// that panics fails with a message instead of taking the worker down.
pub fn spawn_worker<J: Send + 'static>(
    queue: Arc<Queue<J>>,
    mut work: impl FnMut(J) -> JobState + Send + 'static,
) {
    std::thread::Builder::new()
        .name("gpulab-experiments".into())
        .spawn(move || {
            while let Some((id, job)) = queue.next() {
                let started = Instant::now();
                let state = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(job)))
                    .unwrap_or_else(|panic| JobState::Failed {
                        error: format!("the experiment crashed: {}", panic_message(&*panic)),
                    });
                queue.finish(id, state, started.elapsed());
            }
        })
        .expect("the OS can start the experiment worker thread");
}

/// The text of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
        .unwrap_or_else(|| "no message".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_refuses_and_positions_move() {
        let queue: Arc<Queue<u32>> = Queue::new(2);
        let (a, pa) = queue.submit("ann", 1).unwrap();
        let (b, pb) = queue.submit("ann", 2).unwrap();
        assert_eq!((pa, pb), (1, 2));
        assert!(
            matches!(queue.submit("bob", 3), Err(Refused::Full { retry_after_secs }) if retry_after_secs >= 1)
        );
        let (id, job) = queue.next().unwrap();
        assert_eq!((id, job), (a, 1));
        assert_eq!(queue.state(a), Some(JobState::Running));
        assert_eq!(queue.state(b), Some(JobState::Queued { position: 1 }));
        queue.finish(
            a,
            JobState::Failed { error: "x".into() },
            Duration::from_millis(10),
        );
        assert_eq!(queue.state(a), Some(JobState::Failed { error: "x".into() }));
        assert!(queue.submit("bob", 4).is_ok(), "a slot freed up");
        assert_eq!(queue.state(999), None);
    }

    #[test]
    fn the_worker_runs_jobs_one_at_a_time() {
        let queue: Arc<Queue<u64>> = Queue::new(8);
        let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let max_seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (r, m) = (Arc::clone(&running), Arc::clone(&max_seen));
        spawn_worker(Arc::clone(&queue), move |ms| {
            let now = r.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            m.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(ms));
            r.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            JobState::Done {
                result: serde_json::json!(ms),
            }
        });
        let ids: Vec<u64> = (0..4).map(|_| queue.submit("ann", 5).unwrap().0).collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        while ids
            .iter()
            .any(|id| !matches!(queue.state(*id), Some(JobState::Done { .. })))
        {
            assert!(Instant::now() < deadline, "jobs did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(max_seen.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn closing_fails_waiting_jobs_refuses_new_ones_and_counts_usage() {
        let queue: Arc<Queue<u32>> = Queue::new(4);
        let (a, _) = queue.submit("ann", 1).unwrap();
        let (b, _) = queue.submit("bob", 2).unwrap();
        let (id, _) = queue.next().unwrap();
        assert_eq!(id, a);
        assert_eq!(queue.stats().running, 1);
        assert!(
            !queue.wait_idle(Duration::from_millis(20)),
            "a job is running"
        );
        queue.close("shutting down");
        assert_eq!(queue.submit("cy", 3), Err(Refused::Closed));
        assert_eq!(
            queue.state(b),
            Some(JobState::Failed {
                error: "shutting down".into()
            })
        );
        queue.finish(
            a,
            JobState::Done {
                result: serde_json::json!(1),
            },
            Duration::from_millis(250),
        );
        assert!(queue.wait_idle(Duration::from_millis(20)));
        assert!(queue.next().is_none(), "workers stop once closed");
        let stats = queue.stats();
        assert_eq!(
            (stats.done, stats.failed, stats.running, stats.running_peak),
            (1, 1, 0, 1)
        );
        let usage = queue.usage();
        assert_eq!(usage[0].0, "ann");
        assert_eq!((usage[0].1.submitted, usage[0].1.done), (1, 1));
        assert!((usage[0].1.busy_secs - 0.25).abs() < 1e-9);
    }
}

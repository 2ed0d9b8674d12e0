//! The experiment queue: a bounded FIFO in front of one worker thread that owns the
//! compute backend. Jobs run one at a time, so no measurement ever shares the GPU with
//! another experiment. A full queue refuses new jobs (the route answers 429 with
//! Retry-After); a waiting job knows its position; finished jobs are kept for polling
//! and pruned oldest-first.

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
pub struct QueueFull {
    /// Suggested wait before trying again, in seconds.
    pub retry_after_secs: u64,
}

struct Entry<J> {
    job: Option<J>,
    state: JobState,
}

struct Inner<J> {
    next_id: u64,
    pending: VecDeque<u64>,
    entries: HashMap<u64, Entry<J>>,
    finished: VecDeque<u64>,
    average_secs: f64,
}

/// A bounded queue of jobs of type `J`, shared between handlers and the worker.
pub struct Queue<J> {
    inner: Mutex<Inner<J>>,
    wake: Condvar,
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
                average_secs: 2.0,
            }),
            wake: Condvar::new(),
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

    /// Adds a job; returns its id and 1-based position.
    pub fn submit(&self, job: J) -> Result<(u64, usize), QueueFull> {
        let mut inner = self.lock();
        if inner.pending.len() >= self.capacity {
            let retry = (inner.average_secs * inner.pending.len() as f64)
                .ceil()
                .max(1.0) as u64;
            return Err(QueueFull {
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
            },
        );
        drop(inner);
        self.wake.notify_one();
        Ok((id, position))
    }

    /// The job's state, with its current queue position.
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

    /// Estimated seconds until a job submitted now would start.
    pub fn estimated_wait_secs(&self) -> f64 {
        let inner = self.lock();
        inner.average_secs * inner.pending.len() as f64
    }

    /// Blocks until a job is waiting, marks it running and hands it over.
    pub fn next(&self) -> (u64, J) {
        let mut inner = self.lock();
        loop {
            if let Some(id) = inner.pending.pop_front() {
                if let Some(entry) = inner.entries.get_mut(&id) {
                    entry.state = JobState::Running;
                    if let Some(job) = entry.job.take() {
                        return (id, job);
                    }
                }
                continue;
            }
            inner = self
                .wake
                .wait(inner)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Records a finished job and how long it ran.
    pub fn finish(&self, id: u64, state: JobState, ran_for: Duration) {
        let mut inner = self.lock();
        inner.average_secs = 0.8 * inner.average_secs + 0.2 * ran_for.as_secs_f64();
        if let Some(entry) = inner.entries.get_mut(&id) {
            entry.state = state;
        }
        inner.finished.push_back(id);
        while inner.finished.len() > KEEP_FINISHED {
            if let Some(old) = inner.finished.pop_front() {
                inner.entries.remove(&old);
            }
        }
    }
}

/// Runs `work` for each job on a dedicated thread, forever.
pub fn spawn_worker<J: Send + 'static>(
    queue: Arc<Queue<J>>,
    mut work: impl FnMut(J) -> JobState + Send + 'static,
) {
    std::thread::Builder::new()
        .name("gpulab-experiments".into())
        .spawn(move || {
            loop {
                let (id, job) = queue.next();
                let started = Instant::now();
                let state =
                    super::libs::guarded(|| work(job)).unwrap_or_else(|panic| JobState::Failed {
                        error: format!("the experiment crashed: {panic}"),
                    });
                queue.finish(id, state, started.elapsed());
            }
        })
        .expect("the OS can start the experiment worker thread");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_refuses_and_positions_move() {
        let queue: Arc<Queue<u32>> = Queue::new(2);
        let (a, pa) = queue.submit(1).unwrap();
        let (b, pb) = queue.submit(2).unwrap();
        assert_eq!((pa, pb), (1, 2));
        assert!(queue.submit(3).unwrap_err().retry_after_secs >= 1);
        let (id, job) = queue.next();
        assert_eq!((id, job), (a, 1));
        assert_eq!(queue.state(a), Some(JobState::Running));
        assert_eq!(queue.state(b), Some(JobState::Queued { position: 1 }));
        queue.finish(
            a,
            JobState::Failed { error: "x".into() },
            Duration::from_millis(10),
        );
        assert_eq!(queue.state(a), Some(JobState::Failed { error: "x".into() }));
        assert!(queue.submit(4).is_ok(), "a slot freed up");
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
        let ids: Vec<u64> = (0..4).map(|_| queue.submit(5).unwrap().0).collect();
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
}

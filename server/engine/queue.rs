//! The experiment queue: a bounded queue in front of the worker thread(s) that own the
//! compute backend. By default one worker runs jobs one at a time, so no measurement ever
//! shares the GPU with another experiment. Students are served **round-robin**, not first
//! come: the next job is the oldest one of the student whose last job started longest
//! ago (or who has not had one), so a student with several jobs waiting cannot make the
//! others wait behind all of them; and each student may have only a few jobs waiting at
//! once. A full queue refuses new jobs (the route answers 429 with Retry-After); a
//! waiting job knows its position in that order; finished jobs are kept for polling and
//! pruned oldest-first. Job ids are random (not guessable) and each job records its owner
//! (the student cookie): only the owner reads it back, the instructor sees GPU use per
//! student from the queue's own records, and the queue counts outcomes for `/metrics`.
//! Owners are recorded only for accepted jobs and forgotten a day after their last one.
//! On shutdown the queue closes: new jobs are refused, waiting ones fail with a message,
//! and the caller waits for running ones.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

/// Finished jobs kept for polling before the oldest are forgotten.
pub const KEEP_FINISHED: usize = 1000;
/// Owners with no job for this long are forgotten.
pub const FORGET_OWNERS_AFTER: Duration = Duration::from_secs(24 * 3600);

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
    /// This student already has `limit` jobs waiting.
    TooManyPending {
        /// The per-student cap.
        limit: usize,
    },
    /// The students at this network address already have `limit` jobs waiting.
    AddressBusy {
        /// The per-address cap.
        limit: usize,
    },
    /// The server is shutting down.
    Closed,
    /// This student started `limit` experiments in the last minute (class-wide count,
    /// with a shared queue).
    RateLimited {
        /// The per-minute cap.
        limit: u32,
    },
    /// The shared queue's database could not be reached.
    Unavailable(String),
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
    /// When this student's last job was submitted or started (for fairness and pruning).
    #[serde(skip)]
    pub last_active: Option<Instant>,
    /// When this student's last job started (round-robin order).
    #[serde(skip)]
    pub last_started: Option<Instant>,
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

/// A job that ran to an end, as [`Queue::on_finish`]'s listener hears of it.
pub struct FinishedJob<'a> {
    /// The job's id.
    pub id: u64,
    /// Its owner (a student id).
    pub owner: &'a str,
    /// How it ended.
    pub state: &'a JobState,
    /// Time on the worker.
    pub ran_for: Duration,
}

/// The listener [`Queue::on_finish`] installs.
pub type FinishListener = dyn Fn(FinishedJob<'_>) + Send + Sync;

struct Entry<J> {
    job: Option<J>,
    state: JobState,
    owner: String,
    address: Option<IpAddr>,
    queued_at: Instant,
}

struct Inner<J> {
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
    /// Told of every job that ran, before its result is readable (the run history).
    on_finish: std::sync::OnceLock<Box<FinishListener>>,
    capacity: usize,
    per_owner: usize,
    per_address: usize,
}

/// A random job id below 2⁵³, so JavaScript reads it exactly.
pub(crate) fn random_id() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    (u64::from_le_bytes(bytes) >> 11).max(1)
}

impl<J> Inner<J> {
    /// The waiting jobs in the order they will run: repeatedly, the oldest job of the
    /// owner whose last job started longest ago (never-started owners first).
    fn run_order(&self) -> Vec<u64> {
        let mut started: HashMap<&str, Option<Instant>> = HashMap::new();
        let mut left: Vec<u64> = self.pending.iter().copied().collect();
        let mut order = Vec::with_capacity(left.len());
        let mut tick = Instant::now();
        while !left.is_empty() {
            let pick = left
                .iter()
                .enumerate()
                .min_by_key(|(at, id)| {
                    let owner = self.entries.get(id).map_or("", |e| e.owner.as_str());
                    let last = *started
                        .entry(owner)
                        .or_insert_with(|| self.owners.get(owner).and_then(|u| u.last_started));
                    (last, *at)
                })
                .map_or(0, |(at, _)| at);
            let id = left.remove(pick);
            if let Some(entry) = self.entries.get(&id) {
                // Later picks see this owner as just served.
                tick += Duration::from_nanos(1);
                started.insert(entry.owner.as_str(), Some(tick));
            }
            order.push(id);
        }
        order
    }

    fn forget_idle_owners(&mut self) {
        let running: std::collections::HashSet<&str> = self
            .entries
            .values()
            .filter(|e| matches!(e.state, JobState::Queued { .. } | JobState::Running))
            .map(|e| e.owner.as_str())
            .collect();
        let keep: std::collections::HashSet<String> = self
            .owners
            .iter()
            .filter(|(owner, usage)| {
                running.contains(owner.as_str())
                    || usage
                        .last_active
                        .is_none_or(|at| at.elapsed() < FORGET_OWNERS_AFTER)
            })
            .map(|(owner, _)| owner.clone())
            .collect();
        self.owners.retain(|owner, _| keep.contains(owner));
    }
}

impl<J> Queue<J> {
    /// A queue holding at most `capacity` waiting jobs, `per_owner` of them per owner
    /// and `per_address` per network address.
    pub fn new(capacity: usize, per_owner: usize, per_address: usize) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
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
            on_finish: std::sync::OnceLock::new(),
            capacity: capacity.max(1),
            per_owner: per_owner.max(1),
            per_address: per_address.max(1),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<J>> {
        // A panic while holding the lock cannot leave the queue half-updated in a way
        // that matters more than refusing every later request would.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds `job` for `owner` at `address`; returns its id and 1-based position.
    pub fn submit(
        &self,
        owner: &str,
        address: Option<IpAddr>,
        job: J,
    ) -> Result<(u64, usize), Refused> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(Refused::Closed);
        }
        let waiting = inner
            .pending
            .iter()
            .filter(|id| inner.entries.get(id).is_some_and(|e| e.owner == owner))
            .count();
        if waiting >= self.per_owner {
            inner.stats.rejected += 1;
            return Err(Refused::TooManyPending {
                limit: self.per_owner,
            });
        }
        let from_address = address.map_or(0, |a| {
            inner
                .pending
                .iter()
                .filter(|id| inner.entries.get(id).is_some_and(|e| e.address == Some(a)))
                .count()
        });
        if from_address >= self.per_address {
            inner.stats.rejected += 1;
            return Err(Refused::AddressBusy {
                limit: self.per_address,
            });
        }
        if inner.pending.len() >= self.capacity {
            let retry = (inner.stats.average_run_secs * inner.pending.len() as f64)
                .ceil()
                .max(1.0) as u64;
            inner.stats.rejected += 1;
            return Err(Refused::Full {
                retry_after_secs: retry,
            });
        }
        let mut id = random_id();
        while inner.entries.contains_key(&id) {
            id = random_id();
        }
        if inner.owners.len() > 10_000 {
            inner.forget_idle_owners();
        }
        let usage = inner.owners.entry(owner.to_string()).or_default();
        usage.submitted += 1;
        usage.last_active = Some(Instant::now());
        inner.pending.push_back(id);
        let position = inner
            .run_order()
            .iter()
            .position(|p| *p == id)
            .map_or(inner.pending.len(), |p| p + 1);
        inner.entries.insert(
            id,
            Entry {
                job: Some(job),
                state: JobState::Queued { position },
                owner: owner.to_string(),
                address,
                queued_at: Instant::now(),
            },
        );
        drop(inner);
        self.wake.notify_one();
        Ok((id, position))
    }

    /// The state of job `id`, with its current position if it is still waiting; only
    /// for its owner (`None` means any owner).
    pub fn state(&self, id: u64, owner: Option<&str>) -> Option<JobState> {
        let inner = self.lock();
        let entry = inner.entries.get(&id)?;
        if owner.is_some_and(|o| o != entry.owner) {
            return None;
        }
        Some(match entry.state {
            JobState::Queued { .. } => JobState::Queued {
                position: inner
                    .run_order()
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
            if let Some(&id) = inner.run_order().first() {
                inner.pending.retain(|p| *p != id);
                let waited = inner.entries.get_mut(&id).and_then(|entry| {
                    entry.state = JobState::Running;
                    let job = entry.job.take()?;
                    Some((job, entry.owner.clone(), entry.queued_at.elapsed()))
                });
                if let Some((job, owner, waited)) = waited {
                    inner.stats.running += 1;
                    inner.stats.running_peak = inner.stats.running_peak.max(inner.stats.running);
                    let usage = inner.owners.entry(owner).or_default();
                    usage.wait_secs += waited.as_secs_f64();
                    usage.last_started = Some(Instant::now());
                    usage.last_active = Some(Instant::now());
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
        if let Some(listener) = self.on_finish.get() {
            let owner = self.lock().entries.get(&id).map(|e| e.owner.clone());
            if let Some(owner) = owner {
                listener(FinishedJob {
                    id,
                    owner: &owner,
                    state: &state,
                    ran_for,
                });
            }
        }
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

    /// Installs the listener told of every job that ran (once; later calls are ignored).
    /// It runs on the worker's thread before the job's result is readable, so what it
    /// records is there by the time its owner sees the result.
    pub fn on_finish(&self, listener: Box<FinishListener>) {
        let _ = self.on_finish.set(listener);
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
    mut work: impl FnMut(u64, J) -> JobState + Send + 'static,
) {
    std::thread::Builder::new()
        .name("gpulab-experiments".into())
        .spawn(move || {
            while let Some((id, job)) = queue.next() {
                let started = Instant::now();
                let state =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(id, job)))
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
        let queue: Arc<Queue<u32>> = Queue::new(2, 2, 8);
        let (a, pa) = queue.submit("ann", None, 1).unwrap();
        let (b, pb) = queue.submit("ann", None, 2).unwrap();
        assert_eq!((pa, pb), (1, 2));
        assert!(
            matches!(queue.submit("bob", None, 3), Err(Refused::Full { retry_after_secs }) if retry_after_secs >= 1)
        );
        let (id, job) = queue.next().unwrap();
        assert_eq!((id, job), (a, 1));
        assert_eq!(queue.state(a, None), Some(JobState::Running));
        assert_eq!(queue.state(b, None), Some(JobState::Queued { position: 1 }));
        queue.finish(
            a,
            JobState::Failed { error: "x".into() },
            Duration::from_millis(10),
        );
        assert_eq!(
            queue.state(a, None),
            Some(JobState::Failed { error: "x".into() })
        );
        assert!(queue.submit("bob", None, 4).is_ok(), "a slot freed up");
        assert_eq!(queue.state(999, None), None);
    }

    #[test]
    fn students_take_turns_and_each_may_have_only_a_few_waiting() {
        let queue: Arc<Queue<&str>> = Queue::new(16, 2, 8);
        queue.submit("greedy", None, "g1").unwrap();
        queue.submit("greedy", None, "g2").unwrap();
        assert_eq!(
            queue.submit("greedy", None, "g3"),
            Err(Refused::TooManyPending { limit: 2 })
        );
        let (_, first) = queue.next().unwrap();
        assert_eq!(first, "g1");
        // A student arriving later goes before greedy's second job.
        let (ann, position) = queue.submit("ann", None, "a1").unwrap();
        assert_eq!(position, 1, "ann is next: greedy was just served");
        let (_, second) = queue.next().unwrap();
        assert_eq!(second, "a1");
        assert_eq!(
            queue.state(ann, Some("greedy")),
            None,
            "only the owner reads a job"
        );
        assert!(queue.state(ann, Some("ann")).is_some());
        let (_, third) = queue.next().unwrap();
        assert_eq!(third, "g2");
    }

    #[test]
    fn job_ids_are_random_and_refused_submits_are_not_recorded() {
        let queue: Arc<Queue<u32>> = Queue::new(1, 1, 8);
        let (a, _) = queue.submit("ann", None, 1).unwrap();
        let (b, _) = {
            queue.next().unwrap();
            queue.submit("ann", None, 2).unwrap()
        };
        assert!(
            a > 1_000 && b > 1_000 && a != b && b.abs_diff(a) != 1,
            "{a} {b}"
        );
        assert!(a < (1 << 53) && b < (1 << 53));
        for i in 0..100 {
            let _ = queue.submit(&format!("anonymous-{i}"), None, 9);
        }
        assert_eq!(
            queue.usage().len(),
            1,
            "only ann's accepted jobs are recorded"
        );
    }

    #[test]
    fn the_worker_runs_jobs_one_at_a_time() {
        let queue: Arc<Queue<u64>> = Queue::new(8, 8, 8);
        let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let max_seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (r, m) = (Arc::clone(&running), Arc::clone(&max_seen));
        spawn_worker(Arc::clone(&queue), move |_, ms| {
            let now = r.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            m.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(ms));
            r.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            JobState::Done {
                result: serde_json::json!(ms),
            }
        });
        let ids: Vec<u64> = (0..4)
            .map(|_| queue.submit("ann", None, 5).unwrap().0)
            .collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        while ids
            .iter()
            .any(|id| !matches!(queue.state(*id, None), Some(JobState::Done { .. })))
        {
            assert!(Instant::now() < deadline, "jobs did not finish");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(max_seen.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[test]
    fn closing_fails_waiting_jobs_refuses_new_ones_and_counts_usage() {
        let queue: Arc<Queue<u32>> = Queue::new(4, 2, 8);
        let (a, _) = queue.submit("ann", None, 1).unwrap();
        let (b, _) = queue.submit("bob", None, 2).unwrap();
        let (id, _) = queue.next().unwrap();
        assert_eq!(id, a);
        assert_eq!(queue.stats().running, 1);
        assert!(
            !queue.wait_idle(Duration::from_millis(20)),
            "a job is running"
        );
        queue.close("shutting down");
        assert_eq!(queue.submit("cy", None, 3), Err(Refused::Closed));
        assert_eq!(
            queue.state(b, None),
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
        let here: IpAddr = "192.0.2.9".parse().unwrap();
        let busy: Arc<Queue<u32>> = Queue::new(8, 2, 3);
        for student in ["a", "b", "c"] {
            busy.submit(student, Some(here), 1).unwrap();
        }
        assert_eq!(
            busy.submit("d", Some(here), 1),
            Err(Refused::AddressBusy { limit: 3 })
        );
        assert!(
            busy.submit("e", Some("192.0.2.10".parse().unwrap()), 1)
                .is_ok()
        );
        assert_eq!((usage[0].1.submitted, usage[0].1.done), (1, 1));
        assert!((usage[0].1.busy_secs - 0.25).abs() < 1e-9);
    }
}

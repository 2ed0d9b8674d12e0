//! `gpulab db bench-queue`: what the queue itself costs per job, with no experiment in
//! it, on the database a class uses (a scratch SQLite file by default, or PostgreSQL),
//! beside an in-process hand-off (a mutex, a condition variable and a deque: the floor
//! that the in-memory queue this one replaced sat on), measured in the same run.
//!
//! Two phases per row, with the worker-side calls `serve`'s workers make
//! ([`crate::db::job_claims`]: claim, then complete with a run history row, as a real
//! job's completion writes):
//! - **throughput**: one thread submits `jobs` no-op jobs for 50 students in turn, as
//!   fast as the queue takes them (at most 64 waiting: a refused submission waits and
//!   retries), while `workers` threads claim and complete them; jobs per second overall;
//! - **latency**: one job at a time, submit → claim by a waiting worker (woken the way
//!   `serve`'s workers are: in-process on SQLite, `NOTIFY` on PostgreSQL), p50 and p99.
//!
//! The rows it adds are deleted afterwards.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::worker_loop::Activity;
use crate::config::Limits;
use crate::db::job_claims::{self, FinishedRun};
use crate::db::jobs::{self, NewJob};
use crate::db::listener::Listener;
use crate::db::{Db, DbError, Dialect};

/// The prefix of the owners the benchmark's jobs are queued for (its rows are deleted
/// afterwards).
pub const BENCH_OWNER: &str = "queue-bench";

/// One line of the table.
#[derive(Debug, Clone)]
pub struct QueueBenchRow {
    /// `sqlite`, `postgres` or `in-process`.
    pub store: &'static str,
    /// Worker threads.
    pub workers: usize,
    /// Jobs run in the throughput phase.
    pub jobs: usize,
    /// Jobs per second, overall (submit, claim and complete).
    pub jobs_per_sec: f64,
    /// Median submit → claim, one job at a time, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile submit → claim, in milliseconds.
    pub p99_ms: f64,
}

impl std::fmt::Display for QueueBenchRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<10} {:>7} {:>6} {:>10.0} {:>9.3} {:>9.3}",
            self.store, self.workers, self.jobs, self.jobs_per_sec, self.p50_ms, self.p99_ms
        )
    }
}

/// The table's header.
pub const HEADER: &str = "store      workers   jobs     jobs/s  p50 ms submit→claim  p99 ms";

fn percentile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Jobs that may wait at once: a class's queue is short (`--queue-length`, 16 by
/// default), so the submitter waits when this many are queued, as refused students do.
const DEPTH: usize = 64;

/// Limits that refuse the benchmark's jobs only when [`DEPTH`] wait.
fn open_limits() -> Limits {
    Limits {
        queue_length: DEPTH,
        pending_per_student: 1_000_000,
        pending_per_address: 1_000_000,
        experiments_per_minute: 0,
        ..Limits::default()
    }
}

/// Students the benchmark's jobs are spread over, in turn (as a class's are).
const STUDENTS: usize = 50;

fn submit(db: &Db, limits: &Limits, n: usize) -> Result<u64, DbError> {
    let job = NewJob {
        experiment: "noop",
        params: "{}".into(),
        prediction: None,
        round: None,
    };
    let owner = format!("{BENCH_OWNER}-{}", n % STUDENTS);
    loop {
        match db.run_queue(|tx| jobs::submit(tx, &owner, None, &job, limits))? {
            Ok((id, _)) => return Ok(id),
            Err(jobs::Refused::Full { .. }) => std::thread::sleep(Duration::from_micros(200)),
            Err(refused) => {
                return Err(DbError::Task(format!(
                    "the queue refused a job: {refused:?}"
                )));
            }
        }
    }
}

fn noop_run() -> FinishedRun {
    FinishedRun {
        result: Ok(serde_json::json!({})),
        measured: None,
        lab: None,
        backend: "cpu".into(),
        device: "queue benchmark".into(),
        ran_for: Duration::ZERO,
    }
}

/// Claims one job for `name` and completes it as a no-op; false when none waits.
fn claim_and_complete(db: &Db, name: &str) -> Result<bool, DbError> {
    let lease = Duration::from_secs(30);
    let Some(job) = db.run_one(|tx| job_claims::claim(tx, name, lease))? else {
        return Ok(false);
    };
    db.run_queue(|tx| job_claims::complete(tx, &job, name, &noop_run()))?;
    Ok(true)
}

/// Sleeps until a job may be waiting: woken in-process on SQLite, by `NOTIFY` on
/// PostgreSQL.
fn wait(db: &Db, activity: &Activity, listener: &mut Listener) {
    match db.dialect() {
        Dialect::Sqlite => activity.wait(Duration::from_millis(50)),
        Dialect::Postgres => listener.wait(db, Duration::from_millis(50)),
    }
}

/// Measures the queue in `db` with `workers` worker threads and `jobs` jobs.
pub fn measure(db: &Db, workers: usize, jobs: usize) -> Result<QueueBenchRow, DbError> {
    clean(db)?;
    let limits = open_limits();
    let activity = Arc::new(Activity::default());
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let (db, activity, done) = (db.clone(), Arc::clone(&activity), Arc::clone(&done));
            std::thread::spawn(move || -> Result<(), DbError> {
                let (name, mut listener) = (format!("bench-{w}"), Listener::new(jobs::CHANNEL));
                while done.load(Ordering::SeqCst) < jobs {
                    if claim_and_complete(&db, &name)? {
                        done.fetch_add(1, Ordering::SeqCst);
                    } else {
                        wait(&db, &activity, &mut listener);
                    }
                }
                activity.notify();
                Ok(())
            })
        })
        .collect();
    for n in 0..jobs {
        submit(db, &limits, n)?;
        activity.notify();
    }
    for thread in threads {
        thread
            .join()
            .map_err(|_| DbError::Task("a benchmark worker panicked".into()))??;
    }
    let wall = started.elapsed();
    let latencies = latency(db, &limits, (jobs / 4).clamp(50, 1000))?;
    clean(db)?;
    Ok(QueueBenchRow {
        store: match db.dialect() {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
        },
        workers,
        jobs,
        jobs_per_sec: jobs as f64 / wall.as_secs_f64(),
        p50_ms: percentile(&latencies, 0.5),
        p99_ms: percentile(&latencies, 0.99),
    })
}

/// Submit → claim of `n` jobs, one at a time, by a worker waiting for them.
fn latency(db: &Db, limits: &Limits, n: usize) -> Result<Vec<Duration>, DbError> {
    let activity = Arc::new(Activity::default());
    let submitted: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let (claimed, told) = std::sync::mpsc::channel::<u64>();
    let worker = {
        let (db, activity, submitted, stop) = (
            db.clone(),
            Arc::clone(&activity),
            Arc::clone(&submitted),
            Arc::clone(&stop),
        );
        std::thread::spawn(move || -> Result<Vec<Duration>, DbError> {
            let mut listener = Listener::new(jobs::CHANNEL);
            let mut seen = Vec::with_capacity(n);
            while !stop.load(Ordering::SeqCst) {
                let lease = Duration::from_secs(30);
                match db.run_one(|tx| job_claims::claim(tx, "bench-latency", lease))? {
                    Some(job) => {
                        let at = submitted.lock().ok().and_then(|s| s.get(&job.id).copied());
                        if let Some(at) = at {
                            seen.push(at.elapsed());
                        }
                        let _ = claimed.send(job.id);
                        db.run_queue(|tx| {
                            job_claims::complete(tx, &job, "bench-latency", &noop_run())
                        })?;
                    }
                    None => wait(&db, &activity, &mut listener),
                }
            }
            Ok(seen)
        })
    };
    for i in 0..n {
        let before = Instant::now();
        let id = submit(db, limits, i)?;
        if let Ok(mut s) = submitted.lock() {
            s.insert(id, before);
        }
        activity.notify();
        // The next one goes once this one was claimed.
        while told
            .recv_timeout(Duration::from_secs(5))
            .is_ok_and(|claimed| claimed != id)
        {}
    }
    stop.store(true, Ordering::SeqCst);
    activity.notify();
    let mut seen = worker
        .join()
        .map_err(|_| DbError::Task("the latency worker panicked".into()))??;
    seen.sort();
    Ok(seen)
}

/// The same two phases through an in-process hand-off (mutex, condition variable,
/// deque): what a queue in memory costs, for comparison.
pub fn in_process(workers: usize, jobs: usize) -> QueueBenchRow {
    type Handoff = (Mutex<(VecDeque<(u64, Instant)>, usize)>, Condvar);
    let run = |count: usize, one_at_a_time: bool| -> (Duration, Vec<Duration>) {
        let queue: Arc<Handoff> = Arc::new((Mutex::new((VecDeque::new(), 0)), Condvar::new()));
        let threads: Vec<_> = (0..workers)
            .map(|_| {
                let queue = Arc::clone(&queue);
                std::thread::spawn(move || {
                    let mut seen = Vec::new();
                    let (lock, wake) = &*queue;
                    loop {
                        let mut state = lock
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner);
                        while state.0.is_empty() && state.1 < count {
                            state = wake
                                .wait(state)
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                        }
                        let Some((_, at)) = state.0.pop_front() else {
                            return seen;
                        };
                        seen.push(at.elapsed());
                        state.1 += 1;
                        wake.notify_all();
                    }
                })
            })
            .collect();
        let started = Instant::now();
        let (lock, wake) = &*queue;
        for id in 0..count {
            let mut state = lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            state.0.push_back((id as u64, Instant::now()));
            wake.notify_all();
            if one_at_a_time {
                while state.1 <= id {
                    state = wake
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            }
        }
        let mut seen: Vec<Duration> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap_or_default())
            .collect();
        seen.sort();
        (started.elapsed(), seen)
    };
    let (wall, _) = run(jobs, false);
    let (_, latencies) = run((jobs / 4).clamp(50, 1000), true);
    QueueBenchRow {
        store: "in-process",
        workers,
        jobs,
        jobs_per_sec: jobs as f64 / wall.as_secs_f64(),
        p50_ms: percentile(&latencies, 0.5),
        p99_ms: percentile(&latencies, 0.99),
    }
}

/// Deletes the benchmark's rows.
fn clean(db: &Db) -> Result<(), DbError> {
    db.run_blocking(|tx| jobs::forget(tx, BENCH_OWNER, "bench-"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    #[test]
    fn every_benchmark_job_runs_once_and_leaves_no_rows() {
        for (engine, db, _scratch) in backends() {
            let row = measure(&db, 2, 40).unwrap();
            assert_eq!(row.jobs, 40, "{engine}");
            assert!(
                row.jobs_per_sec > 0.0 && row.p99_ms >= row.p50_ms,
                "{engine}: {row}"
            );
            let left = db.run_blocking(jobs::usage).unwrap();
            assert!(
                left.is_empty(),
                "{engine}: the benchmark's jobs are deleted: {left:?}"
            );
        }
        let row = in_process(2, 40);
        assert!(row.jobs_per_sec > 0.0 && row.p99_ms >= row.p50_ms, "{row}");
    }
}

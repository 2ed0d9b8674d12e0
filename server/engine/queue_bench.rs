//! `gpulab db bench-queue`: what the queue itself costs per job, with no experiment in
//! it. On PostgreSQL, N worker threads (each with its own connection) claim and
//! complete pre-queued no-op jobs with the same statements `gpulab worker` uses (the
//! completion writes the run history row, as a real job's does); on SQLite, the
//! single-node queue (kept as full as its default cap allows) hands no-op jobs to one worker whose finish listener writes the
//! same history row to the SQLite file. Per job it times claim → complete; overall, jobs
//! per second. The rows it adds are deleted afterwards.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::queue::{JobState, Queue};
use super::shared_worker;
use crate::config::Limits;
use crate::db::{Db, DbError};
use crate::gpu::card::cpu_card;
use crate::params;

/// The owner the benchmark's jobs are queued for (its rows are deleted afterwards).
pub const BENCH_OWNER: &str = "queue-bench";

/// One line of the table.
#[derive(Debug, Clone)]
pub struct QueueBenchRow {
    /// `postgres` or `sqlite`.
    pub store: &'static str,
    /// Worker threads.
    pub workers: usize,
    /// Jobs run.
    pub jobs: usize,
    /// Jobs per second, overall.
    pub jobs_per_sec: f64,
    /// Median claim → complete, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile claim → complete, in milliseconds.
    pub p99_ms: f64,
}

impl std::fmt::Display for QueueBenchRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<9} {:>7} {:>6} {:>10.0} {:>9.2} {:>9.2}",
            self.store, self.workers, self.jobs, self.jobs_per_sec, self.p50_ms, self.p99_ms
        )
    }
}

/// The table's header.
pub const HEADER: &str = "store     workers   jobs     jobs/s   p50 ms    p99 ms";

fn row(
    store: &'static str,
    workers: usize,
    mut latencies: Vec<Duration>,
    wall: Duration,
) -> QueueBenchRow {
    latencies.sort();
    let pick = |q: f64| {
        let i = ((latencies.len() as f64 - 1.0) * q).round() as usize;
        latencies.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    QueueBenchRow {
        store,
        workers,
        jobs: latencies.len(),
        jobs_per_sec: latencies.len() as f64 / wall.as_secs_f64().max(1e-9),
        p50_ms: pick(0.5),
        p99_ms: pick(0.99),
    }
}

/// `jobs` no-op jobs through the PostgreSQL queue with `workers` threads.
pub fn postgres(db: &Db, workers: usize, jobs: usize) -> Result<QueueBenchRow, DbError> {
    db.run_blocking(|tx| {
        for i in 0..jobs {
            tx.execute(
                &format!(
                    "INSERT INTO jobs (id, owner, experiment, params, turn, status, submitted_at)
                     VALUES (?1, ?2, 'noop', '{{}}', ?3, 'queued', {})",
                    super::shared_queue::NOW
                ),
                params![super::queue::random_id(), BENCH_OWNER, i],
            )?;
        }
        Ok(())
    })?;
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(jobs)));
    let card = cpu_card("queue benchmark");
    let started = Instant::now();
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let (db, latencies, card) = (db.clone(), Arc::clone(&latencies), card.clone());
            std::thread::spawn(move || -> Result<(), DbError> {
                let name = format!("{BENCH_OWNER}-{w}");
                loop {
                    let t0 = Instant::now();
                    let Some(job) =
                        db.run_one(|tx| shared_worker::claim(tx, &name, Duration::from_secs(30)))?
                    else {
                        return Ok(());
                    };
                    let state = JobState::Done {
                        result: serde_json::json!({}),
                    };
                    let report = super::RunReport::new(
                        &job.owner,
                        job.experiment.clone(),
                        job.params.clone(),
                        &card,
                        t0.elapsed(),
                        &state,
                    );
                    db.run_one(|tx| shared_worker::complete(tx, &job, &name, &state, report))?;
                    if let Ok(mut l) = latencies.lock() {
                        l.push(t0.elapsed());
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread
            .join()
            .map_err(|_| DbError::Task("a benchmark worker panicked".into()))??;
    }
    let wall = started.elapsed();
    clean(db)?;
    let latencies = std::mem::take(&mut *latencies.lock().map_err(|_| DbError::Poisoned)?);
    Ok(row("postgres", workers, latencies, wall))
}

/// `jobs` no-op jobs through the single-node queue, whose one worker records each in
/// the SQLite history (as `gpulab serve` does).
pub fn sqlite(db: &Db, jobs: usize) -> Result<QueueBenchRow, DbError> {
    let queue: Arc<Queue<()>> = Queue::new(jobs + 1, jobs + 1, jobs + 1);
    let recorder = db.clone();
    let card = cpu_card("queue benchmark");
    queue.on_finish(Box::new(move |finished| {
        let report = super::RunReport::new(
            finished.owner,
            "noop".into(),
            "{}".into(),
            &card,
            finished.ran_for,
            finished.state,
        );
        let (run, _) = shared_worker::history_rows(report);
        let _ = recorder.run_blocking(|tx| crate::db::experiment_history::record(tx, &run));
    }));
    // A full class queue: the default cap's worth of jobs waiting, refilled as they run.
    let depth = Limits::default().queue_length.min(jobs);
    for _ in 0..depth {
        let _ = queue.submit(BENCH_OWNER, None, ());
    }
    let mut latencies = Vec::with_capacity(jobs);
    let started = Instant::now();
    for submitted in depth..jobs + depth {
        let t0 = Instant::now();
        let Some((id, ())) = queue.next() else { break };
        queue.finish(
            id,
            JobState::Done {
                result: serde_json::json!({}),
            },
            t0.elapsed(),
        );
        latencies.push(t0.elapsed());
        if submitted < jobs {
            let _ = queue.submit(BENCH_OWNER, None, ());
        }
    }
    let wall = started.elapsed();
    clean(db)?;
    Ok(row("sqlite", 1, latencies, wall))
}

fn clean(db: &Db) -> Result<(), DbError> {
    db.run_blocking(|tx| {
        tx.execute("DELETE FROM jobs WHERE owner = ?1", params![BENCH_OWNER])?;
        tx.execute(
            "DELETE FROM experiment_runs WHERE student_id = ?1",
            params![BENCH_OWNER],
        )?;
        tx.execute(
            "DELETE FROM workers WHERE name LIKE ?1",
            params![format!("{BENCH_OWNER}-%")],
        )?;
        Ok(())
    })
}

//! The experiment queue, written once for SQLite and PostgreSQL: a job is a row of
//! `jobs`. This module holds what a web handler asks of it (submit, a job's state, the
//! class's figures); [`super::job_claims`] holds what a worker does (claim, renew,
//! complete, reap). It is the queue of both modes: `gpulab serve` on a SQLite file, and
//! web nodes and `gpulab worker` processes sharing PostgreSQL.
//!
//! The rules: students take turns (a job's `turn` is one more than its owner's previous
//! unfinished job's, a newcomer joins the earliest waiting turn, and jobs run by turn,
//! then age), each student and each network address may have only a few jobs waiting,
//! each student may start only so many a minute — these per-student caps bind only while
//! another student's job waits ([`super::fair_share`]) — and a full queue refuses with a
//! wait.
//! Submissions are serialised (an advisory lock on PostgreSQL; SQLite has one writer),
//! so the caps hold for the whole class. Times are the database's clock in seconds since
//! the epoch, so the machines' clocks never matter. Job ids are random, below 2⁵³ (so
//! JavaScript reads them exactly), and only a job's owner reads it back.

use std::net::IpAddr;

use serde::Serialize;

use super::clock::epoch_now as now;
use super::fair_share::{self, Cap, Waiting};
use super::{DbError, Dialect, Tx};
use crate::config::Limits;
use crate::params;

/// Finished jobs older than this are deleted (seconds).
pub const KEEP_FINISHED_SECS: f64 = 24.0 * 3600.0;

/// The PostgreSQL channel a submission is announced on (workers `LISTEN`).
pub const CHANNEL: &str = "gpulab_jobs";

/// A worker seen within this many seconds is alive (it heartbeats at least twice a
/// second when idle, and with every lease renewal while running).
pub const LIVE_SECS: f64 = 3.0;

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
    /// This student already has `limit` jobs waiting, and another student's job waits.
    TooManyPending {
        /// The per-student cap.
        limit: usize,
    },
    /// The students at this network address already have `limit` jobs waiting, and
    /// another student's job waits.
    AddressBusy {
        /// The per-address cap.
        limit: usize,
    },
    /// The server is shutting down.
    Closed,
    /// This student started `limit` experiments in the last minute (class-wide), and
    /// another student's job waits.
    RateLimited {
        /// The per-minute cap.
        limit: u32,
    },
    /// The queue's database could not be reached.
    Unavailable(String),
}

/// One student's use of the workers over the last day.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct OwnerUsage {
    /// Jobs submitted and accepted.
    pub submitted: u64,
    /// Jobs refused because the queue was full (counted by the engine of the web node
    /// that refused them, since its start).
    pub rejected: u64,
    /// Jobs that finished with a result.
    pub done: u64,
    /// Jobs that failed.
    pub failed: u64,
    /// Seconds the workers spent on this student's jobs.
    pub busy_secs: f64,
    /// Seconds this student's jobs waited in the queue, in total.
    pub wait_secs: f64,
}

/// Queue-wide figures for `/metrics` and the instructor's view.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct QueueStats {
    /// Jobs waiting now.
    pub depth: usize,
    /// Jobs running now.
    pub running: usize,
    /// Most jobs seen running at once (kept by the engine).
    pub running_peak: usize,
    /// Jobs finished with a result (last day).
    pub done: u64,
    /// Jobs failed (errors, time limits, shutdown; last day).
    pub failed: u64,
    /// Jobs refused because the queue was full (counted by the engine).
    pub rejected: u64,
    /// Average run time of the recent jobs, in seconds.
    pub average_run_secs: f64,
}

/// What a student asks to run.
#[derive(Debug, Clone)]
pub struct NewJob<'a> {
    /// The experiment's name.
    pub experiment: &'a str,
    /// Its validated parameters, as JSON.
    pub params: String,
    /// The learner's prediction, if any.
    pub prediction: Option<f64>,
    /// The class round this job runs, if any: the worker that completes it reveals the
    /// round in the same transaction ([`super::rounds::reveal`]).
    pub round: Option<i64>,
}

/// A random job id below 2⁵³, so JavaScript reads it exactly.
pub fn random_id() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    (u64::from_le_bytes(bytes) >> 11).max(1)
}

/// Queues `job` for `owner`, or says why not; with its id and 1-based position.
pub fn submit(
    tx: &mut Tx,
    owner: &str,
    address: Option<IpAddr>,
    job: &NewJob,
    limits: &Limits,
) -> Result<Result<(u64, usize), Refused>, DbError> {
    let now = now(tx.dialect());
    if tx.dialect() == Dialect::Postgres {
        tx.batch("SELECT pg_advisory_xact_lock(7264002)")?;
    }
    let address = address.map(|a| a.to_string());
    let row = tx.query_row(
        &format!(
            "SELECT COUNT(*) FILTER (WHERE status = 'queued'),
                    COUNT(*) FILTER (WHERE status = 'queued' AND owner = ?1),
                    COUNT(*) FILTER (WHERE status = 'queued' AND address = ?2),
                    COUNT(*) FILTER (WHERE owner = ?1 AND submitted_at > {now} - 60),
                    MIN(turn) FILTER (WHERE status = 'queued'),
                    MAX(turn) FILTER (WHERE owner = ?1 AND status IN ('queued', 'running')),
                    COUNT(*) FILTER (WHERE status = 'queued' AND owner <> ?1)
             FROM jobs WHERE status IN ('queued', 'running') OR owner = ?1"
        ),
        params![owner, address],
    )?;
    let waiting = Waiting {
        all: row.get(0)?,
        mine: row.get(1)?,
        others: row.get(6)?,
        from_address: address.is_some().then(|| row.get(2)).transpose()?,
        last_minute: row.get(3)?,
    };
    if let Some(cap) = fair_share::binding_cap(tx, &waiting, limits)? {
        return Ok(Err(refusal(tx, cap, limits)?));
    }
    let floor: Option<i64> = row.get(4)?;
    let previous: Option<i64> = row.get(5)?;
    let turn = previous.map_or(floor.unwrap_or(0), |p| (p + 1).max(floor.unwrap_or(0)));
    let id = random_id();
    // Within a turn, jobs go in the order they came. SQLite's clock ticks in
    // milliseconds, so two submissions can read the same time; the later one is then
    // stamped a microsecond after the latest in its turn, never tied with it (a tie
    // would fall to the random id).
    let greatest = match tx.dialect() {
        Dialect::Postgres => "GREATEST",
        Dialect::Sqlite => "MAX",
    };
    let submitted: f64 = tx
        .query_row(
            &format!(
                "INSERT INTO jobs (id, owner, address, experiment, params, prediction, turn, round_id, status, submitted_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'queued', {greatest}({now}, COALESCE(
                     (SELECT MAX(submitted_at) + 1e-6 FROM jobs WHERE status = 'queued' AND turn = ?7), 0)))
                 RETURNING submitted_at"
            ),
            params![id, owner, address, job.experiment, job.params, job.prediction, turn, job.round],
        )?
        .get(0)?;
    let position = position(tx, turn, submitted, id)?;
    if tx.dialect() == Dialect::Postgres {
        tx.batch(&format!("NOTIFY {CHANNEL}"))?;
    }
    Ok(Ok((id, position)))
}

/// What a student is told when `cap` refuses their job.
fn refusal(tx: &mut Tx, cap: Cap, limits: &Limits) -> Result<Refused, DbError> {
    let limit = |cap: u64| usize::try_from(cap).unwrap_or(usize::MAX);
    Ok(match cap {
        Cap::PerMinute => Refused::RateLimited {
            limit: limits.experiments_per_minute,
        },
        Cap::PendingPerStudent => Refused::TooManyPending {
            limit: limit(limits.pending_per_student),
        },
        Cap::PendingPerAddress => Refused::AddressBusy {
            limit: limit(limits.pending_per_address),
        },
        Cap::QueueLength => Refused::Full {
            retry_after_secs: estimated_wait_secs(tx)?.ceil().max(1.0) as u64,
        },
    })
}

fn position(tx: &mut Tx, turn: i64, submitted: f64, id: u64) -> Result<usize, DbError> {
    let ahead: usize = tx
        .query_row(
            "SELECT COUNT(*) FROM jobs WHERE status = 'queued'
             AND (turn < ?1 OR (turn = ?1 AND (submitted_at < ?2 OR (submitted_at = ?2 AND id < ?3))))",
            params![turn, submitted, id],
        )?
        .get(0)?;
    Ok(ahead + 1)
}

/// Job `id`'s state, for its owner (`None`: anyone).
pub fn state(tx: &mut Tx, id: u64, owner: Option<&str>) -> Result<Option<JobState>, DbError> {
    let Some(row) = tx.query_opt(
        "SELECT owner, status, result, error, turn, submitted_at FROM jobs WHERE id = ?1",
        params![id],
    )?
    else {
        return Ok(None);
    };
    let who: String = row.get(0)?;
    if owner.is_some_and(|o| o != who) {
        return Ok(None);
    }
    let status: String = row.get(1)?;
    Ok(Some(match status.as_str() {
        "queued" => JobState::Queued {
            position: position(tx, row.get(4)?, row.get(5)?, id)?,
        },
        "running" => JobState::Running,
        "done" => {
            let text: String = row.get(2)?;
            JobState::Done {
                result: serde_json::from_str(&text).unwrap_or_default(),
            }
        }
        _ => JobState::Failed {
            error: row.get::<Option<String>>(3)?.unwrap_or_default(),
        },
    }))
}

/// Jobs waiting now.
pub fn depth(tx: &mut Tx) -> Result<usize, DbError> {
    tx.query_row(
        "SELECT COUNT(*) FROM jobs WHERE status = 'queued'",
        params![],
    )?
    .get(0)
}

/// Class-wide figures: jobs waiting and running now, and the outcomes of the jobs that
/// finished since `since` (the database's clock, seconds).
pub fn stats(tx: &mut Tx, since: f64) -> Result<QueueStats, DbError> {
    let row = tx.query_row(
        "SELECT COUNT(*) FILTER (WHERE status = 'queued'),
                COUNT(*) FILTER (WHERE status = 'running'),
                COUNT(*) FILTER (WHERE status = 'done' AND finished_at >= ?1),
                COUNT(*) FILTER (WHERE status = 'failed' AND finished_at >= ?1)
         FROM jobs",
        params![since],
    )?;
    let running: usize = row.get(1)?;
    Ok(QueueStats {
        depth: row.get(0)?,
        running,
        running_peak: running,
        done: row.get(2)?,
        failed: row.get(3)?,
        rejected: 0,
        average_run_secs: average_run_secs(tx)?,
    })
}

fn average_run_secs(tx: &mut Tx) -> Result<f64, DbError> {
    tx.query_row(
        "SELECT COALESCE(AVG(finished_at - started_at), 0) FROM
           (SELECT finished_at, started_at FROM jobs WHERE status = 'done'
            ORDER BY finished_at DESC LIMIT 50) AS recent",
        params![],
    )?
    .get(0)
}

/// Seconds a new job may wait: the recent run time times the jobs ahead, shared by the
/// workers seen lately.
pub fn estimated_wait_secs(tx: &mut Tx) -> Result<f64, DbError> {
    let now = now(tx.dialect());
    let row = tx.query_row(
        &format!(
            "SELECT (SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')),
                    (SELECT COUNT(*) FROM workers WHERE seen_at > {now} - ?1)"
        ),
        params![LIVE_SECS],
    )?;
    let (ahead, workers): (f64, f64) = (row.get(0)?, row.get(1)?);
    Ok(average_run_secs(tx)? * ahead / workers.max(1.0))
}

/// Each student's use of the workers over the last day, busiest first.
pub fn usage(tx: &mut Tx) -> Result<Vec<(String, OwnerUsage)>, DbError> {
    let rows = tx.query(
        "SELECT owner, COUNT(*),
                COUNT(*) FILTER (WHERE status = 'done'),
                COUNT(*) FILTER (WHERE status = 'failed'),
                COALESCE(SUM(finished_at - started_at), 0),
                COALESCE(SUM(COALESCE(started_at, finished_at) - submitted_at), 0)
         FROM jobs GROUP BY owner ORDER BY 5 DESC, owner",
        params![],
    )?;
    rows.iter()
        .map(|row| {
            Ok((
                row.get(0)?,
                OwnerUsage {
                    submitted: row.get(1)?,
                    done: row.get(2)?,
                    failed: row.get(3)?,
                    busy_secs: row.get(4)?,
                    wait_secs: row.get(5)?,
                    rejected: 0,
                },
            ))
        })
        .collect()
}

/// The value finished job `id` measured, if it measured one.
pub fn measured(tx: &mut Tx, id: u64) -> Result<Option<f64>, DbError> {
    Ok(tx
        .query_opt(
            "SELECT measured FROM jobs WHERE id = ?1 AND status = 'done'",
            params![id],
        )?
        .map(|row| row.get::<Option<f64>>(0))
        .transpose()?
        .flatten())
}

/// Deletes every job of the owners whose ids start with `owner_prefix` and their run
/// history (a benchmark's rows), and the workers whose names start with `worker_prefix`.
pub fn forget(tx: &mut Tx, owner_prefix: &str, worker_prefix: &str) -> Result<(), DbError> {
    tx.execute(
        "DELETE FROM jobs WHERE substr(owner, 1, length(?1)) = ?1",
        params![owner_prefix],
    )?;
    tx.execute(
        "DELETE FROM experiment_runs WHERE substr(student_id, 1, length(?1)) = ?1",
        params![owner_prefix],
    )?;
    tx.execute(
        "DELETE FROM workers WHERE substr(name, 1, length(?1)) = ?1",
        params![worker_prefix],
    )?;
    Ok(())
}

/// Fails every waiting job with `message` (a one-box server shutting down: nothing
/// will run them); how many.
pub fn fail_waiting(tx: &mut Tx, message: &str) -> Result<usize, DbError> {
    let now = now(tx.dialect());
    tx.execute(
        &format!(
            "UPDATE jobs SET status = 'failed', error = ?1, finished_at = {now} WHERE status = 'queued'"
        ),
        params![message],
    )
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;

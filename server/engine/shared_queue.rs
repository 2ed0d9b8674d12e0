//! The class-wide experiment queue in PostgreSQL, for web nodes and GPU workers in
//! separate processes (`serve --role web`, `worker --gpu N`). A job is a row of `jobs`:
//! a web node inserts it (under an advisory lock, so the per-student, per-address,
//! per-minute and queue-length caps hold for the whole class, not per node) and sends
//! `NOTIFY gpulab_jobs`; a worker claims the next one with `FOR UPDATE SKIP LOCKED`,
//! holds a lease it renews while running, and writes the result; any web node answers
//! the poll. Order is round-robin like the in-memory queue: a job's `turn` is one more
//! than its owner's previous unfinished job's (a newcomer joins the earliest waiting
//! turn), and jobs run by turn, then age. A lease that expires (its worker died) puts the
//! job back once; a second expiry fails it with a message. Times are the database's
//! clock, in seconds since the epoch, so the machines' clocks never matter.

use std::net::IpAddr;

use super::queue::{JobState, OwnerUsage, QueueStats, Refused};
use crate::config::Limits;
use crate::db::{DbError, Tx};
use crate::params;

/// The database's clock, in seconds.
pub const NOW: &str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)";
/// The channel workers listen on.
pub const CHANNEL: &str = "gpulab_jobs";
/// Finished jobs older than this are deleted (seconds).
pub const KEEP_FINISHED_SECS: f64 = 24.0 * 3600.0;

/// What a web node asks to run.
#[derive(Debug, Clone)]
pub struct NewJob<'a> {
    /// The experiment's name.
    pub experiment: &'a str,
    /// Its validated parameters, as JSON.
    pub params: String,
    /// The learner's prediction, if any.
    pub prediction: Option<f64>,
}

/// Queues `job` for `owner`, or says why not; with its id and 1-based position.
pub fn submit(
    tx: &mut Tx,
    owner: &str,
    address: Option<IpAddr>,
    job: &NewJob,
    limits: &Limits,
) -> Result<Result<(u64, usize), Refused>, DbError> {
    tx.batch("SELECT pg_advisory_xact_lock(7264002)")?;
    let address = address.map(|a| a.to_string());
    let row = tx.query_row(
        &format!(
            "SELECT COUNT(*) FILTER (WHERE status = 'queued'),
                    COUNT(*) FILTER (WHERE status = 'queued' AND owner = ?1),
                    COUNT(*) FILTER (WHERE status = 'queued' AND address = ?2),
                    COUNT(*) FILTER (WHERE owner = ?1 AND submitted_at > {NOW} - 60),
                    MIN(turn) FILTER (WHERE status = 'queued'),
                    MAX(turn) FILTER (WHERE owner = ?1 AND status IN ('queued', 'running'))
             FROM jobs WHERE status IN ('queued', 'running') OR owner = ?1"
        ),
        params![owner, address],
    )?;
    let (waiting, mine, from_address, last_minute): (usize, u64, u64, u64) =
        (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
    let per_minute = u64::from(limits.experiments_per_minute);
    if per_minute > 0 && last_minute >= per_minute {
        return Ok(Err(Refused::RateLimited {
            limit: limits.experiments_per_minute,
        }));
    }
    if mine >= limits.pending_per_student {
        return Ok(Err(Refused::TooManyPending {
            limit: usize::try_from(limits.pending_per_student).unwrap_or(usize::MAX),
        }));
    }
    if address.is_some() && from_address >= limits.pending_per_address {
        return Ok(Err(Refused::AddressBusy {
            limit: usize::try_from(limits.pending_per_address).unwrap_or(usize::MAX),
        }));
    }
    if waiting >= limits.queue_length {
        let wait = estimated_wait_secs(tx)?;
        return Ok(Err(Refused::Full {
            retry_after_secs: wait.ceil().max(1.0) as u64,
        }));
    }
    let floor: Option<i64> = row.get(4)?;
    let previous: Option<i64> = row.get(5)?;
    let turn = previous.map_or(floor.unwrap_or(0), |p| (p + 1).max(floor.unwrap_or(0)));
    let id = super::queue::random_id();
    let submitted: f64 = tx
        .query_row(
            &format!(
                "INSERT INTO jobs (id, owner, address, experiment, params, prediction, turn, status, submitted_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'queued', {NOW}) RETURNING submitted_at"
            ),
            params![id, owner, address, job.experiment, job.params, job.prediction, turn],
        )?
        .get(0)?;
    let position = position(tx, turn, submitted, id)?;
    tx.batch(&format!("NOTIFY {CHANNEL}"))?;
    Ok(Ok((id, position)))
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

/// Class-wide figures: jobs waiting and running now, and outcomes of the last day.
pub fn stats(tx: &mut Tx) -> Result<QueueStats, DbError> {
    let row = tx.query_row(
        "SELECT COUNT(*) FILTER (WHERE status = 'queued'),
                COUNT(*) FILTER (WHERE status = 'running'),
                COUNT(*) FILTER (WHERE status = 'done'),
                COUNT(*) FILTER (WHERE status = 'failed')
         FROM jobs",
        params![],
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
    let row = tx.query_row(
        &format!(
            "SELECT (SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')),
                    (SELECT COUNT(*) FROM workers WHERE seen_at > {NOW} - ?1)"
        ),
        params![super::shared_worker::LIVE_SECS],
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
                    ..OwnerUsage::default()
                },
            ))
        })
        .collect()
}

#[cfg(test)]
#[path = "shared_queue_tests.rs"]
mod tests;

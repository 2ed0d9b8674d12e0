//! A worker's side of the experiment queue ([`super::jobs`]), on SQLite and PostgreSQL:
//! the `workers` table (each worker's device card and heartbeat), claiming the next job
//! (`FOR UPDATE SKIP LOCKED` on PostgreSQL, where several workers claim at once), a
//! lease renewed while the job runs, reaping the jobs of a worker that stopped renewing
//! (put back once, failed the second time), and [`complete`]: the one place a finished
//! run is recorded — the job's result and measured value, the run history, the latest
//! measurement of its quantity, the scored prediction, a tuning lab's attempt and the
//! reveal of the class round the job ran — in one transaction, and only if this worker
//! still holds the job, so a worker that lost its lease cannot overwrite the retry's
//! result. A round is revealed by the worker that measured it, with its device, however
//! many web nodes come and go meanwhile (pg-boss's "on complete", in SQL).

use std::time::Duration;

use super::clock::epoch_now as now;
use super::experiment_history::{self, ExperimentRun};
use super::jobs::{KEEP_FINISHED_SECS, LIVE_SECS};
use super::lab_attempts::{self, LabAttempt};
use super::measurements;
use super::predictions::{self, PredictionRow};
use super::rounds;
use super::{DbError, Dialect, Tx};
use crate::params;

/// A claimed job.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// Its id.
    pub id: u64,
    /// The student who asked for it.
    pub owner: String,
    /// The experiment's name.
    pub experiment: String,
    /// Its validated parameters, as JSON.
    pub params: String,
    /// The learner's prediction, if any.
    pub prediction: Option<f64>,
    /// The class round it runs, if any (revealed when it completes).
    pub round: Option<i64>,
}

/// The value a run measured, with its unit.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredValue {
    /// The quantity's key (`transfer.pinned_h2d_gbps`).
    pub quantity: String,
    /// Its unit.
    pub unit: String,
    /// The value.
    pub value: f64,
}

/// How a job ended, typed: what [`complete`] records.
#[derive(Debug, Clone)]
pub struct FinishedRun {
    /// The result as the API returns it (with provenance), or the error a student reads.
    pub result: Result<serde_json::Value, String>,
    /// The value the run measured, if it measured one.
    pub measured: Option<MeasuredValue>,
    /// The tuning-lab attempt the run graded, if it was a lab's.
    pub lab: Option<LabAttempt>,
    /// `cuda` or `cpu`.
    pub backend: String,
    /// The device's name.
    pub device: String,
    /// Time on the worker.
    pub ran_for: Duration,
}

/// Registers (or refreshes) worker `name` with its device card (JSON) and whether it
/// runs a job now.
pub fn register(
    tx: &mut Tx,
    name: &str,
    backend: &str,
    card_json: &str,
    running: bool,
) -> Result<(), DbError> {
    let now = now(tx.dialect());
    tx.execute(
        &format!(
            "INSERT INTO workers (name, backend, device, seen_at, running) VALUES (?1, ?2, ?3, {now}, ?4)
             ON CONFLICT (name) DO UPDATE SET backend = ?2, device = ?3, seen_at = {now}, running = ?4"
        ),
        params![name, backend, card_json, running],
    )?;
    Ok(())
}

/// Removes worker `name` (it stopped).
pub fn unregister(tx: &mut Tx, name: &str) -> Result<(), DbError> {
    tx.execute("DELETE FROM workers WHERE name = ?1", params![name])?;
    Ok(())
}

/// Whether a live worker goes by `name`.
pub fn name_taken(tx: &mut Tx, name: &str) -> Result<bool, DbError> {
    let now = now(tx.dialect());
    Ok(tx
        .query_opt(
            &format!("SELECT 1 FROM workers WHERE name = ?1 AND seen_at > {now} - ?2"),
            params![name, LIVE_SECS],
        )?
        .is_some())
}

/// The device card (JSON) the most recently seen worker registered, if any.
pub fn newest_card(tx: &mut Tx) -> Result<Option<String>, DbError> {
    tx.query_opt(
        "SELECT device FROM workers ORDER BY seen_at DESC LIMIT 1",
        params![],
    )?
    .map(|r| r.get::<String>(0))
    .transpose()
}

/// Puts back (once) or fails the jobs whose worker stopped renewing; deletes finished
/// jobs older than a day; fails the class rounds whose job failed so or is gone. How
/// many jobs were put back or failed.
pub fn reap(tx: &mut Tx) -> Result<usize, DbError> {
    let now = now(tx.dialect());
    let expired = tx.execute(
        &format!(
            "UPDATE jobs SET
               status = CASE WHEN tries >= 2 THEN 'failed' ELSE 'queued' END,
               error = CASE WHEN tries >= 2 THEN 'The worker running this experiment stopped twice before it finished (a GPU server went away). It did not complete; run it again.' END,
               finished_at = CASE WHEN tries >= 2 THEN {now} END,
               worker = NULL, lease_until = NULL
             WHERE status = 'running' AND lease_until < {now}"
        ),
        params![],
    )?;
    tx.execute(
        &format!(
            "DELETE FROM jobs WHERE status IN ('done', 'failed') AND finished_at < {now} - ?1"
        ),
        params![KEEP_FINISHED_SECS],
    )?;
    rounds::fail_abandoned(tx)?;
    Ok(expired)
}

/// Claims the next job in turn order for worker `name`, leased for `lease`.
pub fn claim(tx: &mut Tx, name: &str, lease: Duration) -> Result<Option<Claimed>, DbError> {
    let now = now(tx.dialect());
    // Several PostgreSQL workers claim at once; SQLite has one writer.
    let skip_locked = match tx.dialect() {
        Dialect::Postgres => "FOR UPDATE SKIP LOCKED",
        Dialect::Sqlite => "",
    };
    let row = tx.query_opt(
        &format!(
            "UPDATE jobs SET status = 'running', worker = ?1, started_at = {now},
                    lease_until = {now} + ?2, tries = tries + 1
             WHERE id = (SELECT id FROM jobs WHERE status = 'queued'
                         ORDER BY turn, submitted_at, id LIMIT 1 {skip_locked})
             RETURNING id, owner, experiment, params, prediction, round_id"
        ),
        params![name, lease.as_secs_f64()],
    )?;
    row.map(|r| {
        Ok(Claimed {
            id: r.get(0)?,
            owner: r.get(1)?,
            experiment: r.get(2)?,
            params: r.get(3)?,
            prediction: r.get(4)?,
            round: r.get(5)?,
        })
    })
    .transpose()
}

/// Renews worker `name`'s lease on job `id` (and its heartbeat); false when the job is
/// no longer this worker's.
pub fn renew(tx: &mut Tx, id: u64, name: &str, lease: Duration) -> Result<bool, DbError> {
    let now = now(tx.dialect());
    tx.execute(
        &format!("UPDATE workers SET seen_at = {now}, running = 1 WHERE name = ?1"),
        params![name],
    )?;
    let held = tx.execute(
        &format!(
            "UPDATE jobs SET lease_until = {now} + ?3
             WHERE id = ?1 AND worker = ?2 AND status = 'running'"
        ),
        params![id, name, lease.as_secs_f64()],
    )?;
    Ok(held == 1)
}

/// Records how `job` ended — its result, its run in the history, its scored prediction
/// and, for a class round's job, the round's reveal (or failure) — in this one
/// transaction, if worker `name` still holds it; false (and nothing written) when it
/// does not (its lease expired and the job went back).
pub fn complete(
    tx: &mut Tx,
    job: &Claimed,
    name: &str,
    run: &FinishedRun,
) -> Result<bool, DbError> {
    let now = now(tx.dialect());
    let (status, result, error) = match &run.result {
        Ok(result) => ("done", Some(result.to_string()), None),
        Err(error) => ("failed", None, Some(error.clone())),
    };
    let measured = run.measured.as_ref().filter(|_| run.result.is_ok());
    let held = tx.execute(
        &format!(
            "UPDATE jobs SET status = ?3, result = ?4, error = ?5, measured = ?6, finished_at = {now},
                    lease_until = NULL
             WHERE id = ?1 AND worker = ?2 AND status = 'running'"
        ),
        params![job.id, name, status, result, error, measured.map(|m| m.value)],
    )?;
    if held != 1 {
        return Ok(false);
    }
    let (history, prediction) = rows(job, run);
    experiment_history::record(tx, &history)?;
    if let Some(m) = measured {
        measurements::record(tx, &m.quantity, &job.params, m.value)?;
    }
    if let Some(row) = &prediction {
        predictions::record(tx, row)?;
    }
    if let (Some(attempt), Ok(_)) = (&run.lab, &run.result) {
        lab_attempts::record(tx, &job.owner, attempt, &run.backend)?;
    }
    if let Some(round) = job.round {
        match (&run.result, measured) {
            (Ok(_), Some(m)) => {
                let taken = rounds::Taken {
                    value: m.value,
                    unit: &m.unit,
                    backend: &run.backend,
                    device: &run.device,
                };
                rounds::reveal(tx, round, &taken)?;
            }
            (Ok(_), None) => rounds::fail(tx, round, "the run measured nothing to compare with")?,
            (Err(error), _) => rounds::fail(tx, round, error)?,
        }
    }
    Ok(true)
}

/// Whether completing `job` with `run` writes a learner's own record (a scored
/// prediction, a lab attempt, a class round's reveal), which must reach the disk before
/// the result is readable, rather than only queue state.
pub fn keeps_learner_records(job: &Claimed, run: &FinishedRun) -> bool {
    job.prediction.is_some() || job.round.is_some() || run.lab.is_some()
}

/// The rows the run history and the predictions table keep of one finished run.
fn rows(job: &Claimed, run: &FinishedRun) -> (ExperimentRun, Option<PredictionRow>) {
    let measured = run.measured.as_ref().filter(|_| run.result.is_ok());
    let prediction = job
        .prediction
        .zip(measured)
        .map(|(predicted, m)| PredictionRow {
            student_id: job.owner.clone(),
            experiment: job.experiment.clone(),
            quantity: m.quantity.clone(),
            params: job.params.clone(),
            predicted,
            measured: m.value,
            unit: m.unit.clone(),
            backend: run.backend.clone(),
            device: run.device.clone(),
        });
    let history = ExperimentRun {
        student_id: job.owner.clone(),
        experiment: job.experiment.clone(),
        params: job.params.clone(),
        backend: run.backend.clone(),
        device: run.device.clone(),
        duration_ms: u64::try_from(run.ran_for.as_millis()).unwrap_or(u64::MAX),
        ok: run.result.is_ok(),
        error: run.result.as_ref().err().cloned(),
    };
    (history, prediction)
}

#[cfg(test)]
#[path = "job_claims_tests.rs"]
mod tests;

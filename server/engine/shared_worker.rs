//! `gpulab worker`: one process per GPU serving the class-wide queue in PostgreSQL
//! ([`super::shared_queue`]). It opens its device and self-tests exactly as `serve`
//! does, registers its device card (web nodes show it), then loops: put back jobs whose
//! lease expired, claim the next job with `FOR UPDATE SKIP LOCKED`, run it while a
//! second thread renews the lease, and store the result. The result, the run history and
//! the scored prediction are written in one transaction, and only if this worker still
//! holds the job (a worker that lost its lease cannot overwrite the retry's result). It
//! runs one job at a time, sleeps on `LISTEN gpulab_jobs` when there is none, and backs
//! off while the database is away. A second thread serves the allocator playgrounds this
//! worker owns ([`crate::playground::remote`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::RunReport;
use super::backend::Backend;
use super::queue::JobState;
use super::shared_queue::{CHANNEL, KEEP_FINISHED_SECS, NOW};
use super::worker::Worker;
use crate::config::Limits;
use crate::db::experiment_history::{self, ExperimentRun};
use crate::db::predictions::{self, PredictionRow};
use crate::db::sql::Value;
use crate::db::{Db, DbError, Tx};
use crate::gpu::DeviceCard;
use crate::params;
use crate::playground::{Playgrounds, remote};

/// A worker's settings.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Its name in the queue (unique per process).
    pub name: String,
    /// How long a claim holds without renewal.
    pub lease: Duration,
    /// The caps in force (job time limit, sizes).
    pub limits: Limits,
}

/// A claimed job.
pub(crate) struct Claimed {
    pub(crate) id: u64,
    pub(crate) owner: String,
    pub(crate) experiment: String,
    pub(crate) params: String,
    pub(crate) prediction: Option<f64>,
}

/// The device card the most recently seen worker registered, if any.
pub fn class_card(tx: &mut Tx) -> Result<Option<DeviceCard>, DbError> {
    let row = tx.query_opt(
        "SELECT device FROM workers ORDER BY seen_at DESC LIMIT 1",
        params![],
    )?;
    let Some(text) = row.map(|r| r.get::<String>(0)).transpose()? else {
        return Ok(None);
    };
    // The card's `kind` is a `&'static str`: read it from an owned JSON value.
    let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    Ok(<DeviceCard as serde::Deserialize<'static>>::deserialize(value).ok())
}

fn register(tx: &mut Tx, name: &str, card: &DeviceCard, running: bool) -> Result<(), DbError> {
    let device = serde_json::to_string(card).unwrap_or_default();
    tx.execute(
        &format!(
            "INSERT INTO workers (name, backend, device, seen_at, running) VALUES (?1, ?2, ?3, {NOW}, ?4)
             ON CONFLICT (name) DO UPDATE SET backend = ?2, device = ?3, seen_at = {NOW}, running = ?4"
        ),
        params![name, card.kind, device, running],
    )?;
    Ok(())
}

/// Waits (up to a few seconds, for a restarted worker's old row to go quiet) until no
/// live worker uses `name`: two workers under one name would renew each other's leases.
fn claim_name(db: &Db, name: &str) -> Result<(), DbError> {
    let deadline = Instant::now() + Duration::from_secs(6);
    loop {
        let taken = db.run_blocking(|tx| {
            Ok(tx
                .query_opt(
                    &format!("SELECT 1 FROM workers WHERE name = ?1 AND seen_at > {NOW} - ?2"),
                    params![name, LIVE_SECS],
                )?
                .is_some())
        })?;
        if !taken {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(DbError::Task(format!(
                "another worker named `{name}` is serving this class queue; give each worker its own --name (GPULAB_WORKER_NAME)"
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A worker seen within this many seconds is alive (it heartbeats at least twice a
/// second when idle, and with every lease renewal while running).
pub const LIVE_SECS: f64 = 3.0;

/// Puts back (once) or fails the jobs whose worker stopped renewing; deletes finished
/// jobs older than a day. How many were put back or failed.
pub(crate) fn reap(tx: &mut Tx) -> Result<usize, DbError> {
    let expired = tx.execute(
        &format!(
            "UPDATE jobs SET
               status = CASE WHEN tries >= 2 THEN 'failed' ELSE 'queued' END,
               error = CASE WHEN tries >= 2 THEN 'The worker running this experiment stopped twice before it finished (a GPU server went away). It did not complete; run it again.' END,
               finished_at = CASE WHEN tries >= 2 THEN {NOW} END,
               worker = NULL, lease_until = NULL
             WHERE status = 'running' AND lease_until < {NOW}"
        ),
        params![],
    )?;
    tx.execute(
        &format!(
            "DELETE FROM jobs WHERE status IN ('done', 'failed') AND finished_at < {NOW} - ?1"
        ),
        params![KEEP_FINISHED_SECS],
    )?;
    Ok(expired)
}

pub(crate) fn claim(tx: &mut Tx, name: &str, lease: Duration) -> Result<Option<Claimed>, DbError> {
    let row = tx.query_opt(
        &format!(
            "UPDATE jobs SET status = 'running', worker = ?1, started_at = {NOW},
                    lease_until = {NOW} + ?2, tries = tries + 1
             WHERE id = (SELECT id FROM jobs WHERE status = 'queued'
                         ORDER BY turn, submitted_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING id, owner, experiment, params, prediction"
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
        })
    })
    .transpose()
}

pub(crate) fn renew(tx: &mut Tx, id: u64, name: &str, lease: Duration) -> Result<bool, DbError> {
    tx.execute(
        &format!("UPDATE workers SET seen_at = {NOW}, running = 1 WHERE name = ?1"),
        params![name],
    )?;
    let held = tx.execute(
        &format!(
            "UPDATE jobs SET lease_until = {NOW} + ?3
             WHERE id = ?1 AND worker = ?2 AND status = 'running'"
        ),
        params![id, name, lease.as_secs_f64()],
    )?;
    Ok(held == 1)
}

/// Stores the outcome, the run history and the prediction, if this worker still holds
/// the job; false when it does not (its lease expired and the job went back). One
/// statement (the result and the history row together) when there is no prediction,
/// else one transaction: run it with [`Db::run_one`] only when `report` has no prediction.
pub(crate) fn complete(
    tx: &mut Tx,
    job: &Claimed,
    name: &str,
    state: &JobState,
    report: RunReport,
) -> Result<bool, DbError> {
    let (status, result, error) = match state {
        JobState::Done { result } => ("done", Some(result.to_string()), None),
        JobState::Failed { error } => ("failed", None, Some(error.clone())),
        _ => (
            "failed",
            None,
            Some("the experiment ended without a result".to_string()),
        ),
    };
    let (run, prediction) = history_rows(report);
    let mut values = vec![
        Value::Int(i64::try_from(job.id).unwrap_or(i64::MAX)),
        Value::Text(name.to_string()),
        Value::Text(status.to_string()),
        result.map_or(Value::Null, Value::Text),
        error.map_or(Value::Null, Value::Text),
    ];
    values.extend(experiment_history::values(&run));
    let params: Vec<&dyn crate::db::sql::ToValue> = values.iter().map(|v| v as _).collect();
    // The run is inserted only if the job was still this worker's: the count says which.
    let held = tx.execute(
        &format!(
            "WITH done AS (
               UPDATE jobs SET status = ?3, result = ?4, error = ?5, finished_at = {NOW}, lease_until = NULL
               WHERE id = ?1 AND worker = ?2 AND status = 'running' RETURNING id)
             INSERT INTO experiment_runs ({})
             SELECT ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13 FROM done",
            experiment_history::COLUMNS
        ),
        &params,
    )?;
    if held != 1 {
        return Ok(false);
    }
    if let Some(row) = &prediction {
        predictions::record(tx, row)?;
    }
    Ok(true)
}

/// The rows the run history and the predictions table keep of one finished run.
pub fn history_rows(report: RunReport) -> (ExperimentRun, Option<PredictionRow>) {
    let prediction = report.prediction.map(|p| PredictionRow {
        student_id: report.owner.clone(),
        experiment: report.experiment.clone(),
        quantity: p.quantity,
        params: report.params.clone(),
        predicted: p.predicted,
        measured: p.measured,
        unit: p.unit,
        backend: report.backend.clone(),
        device: report.device.clone(),
    });
    let run = ExperimentRun {
        student_id: report.owner,
        experiment: report.experiment,
        params: report.params,
        backend: report.backend,
        device: report.device,
        duration_ms: u64::try_from(report.ran_for.as_millis()).unwrap_or(u64::MAX),
        ok: report.error.is_none(),
        error: report.error,
    };
    (run, prediction)
}

/// Serves the class queue until `stop` is set (then finishes the job in hand).
pub fn serve(db: &Db, settings: &WorkerSettings, stop: &Arc<AtomicBool>) -> Result<(), DbError> {
    let (backend, card, contact) = Backend::open();
    if !contact.ok() {
        tracing::warn!(
            "the GPU failed its start-up self-test; this worker runs experiments on the CPU"
        );
    }
    let timeout = settings.limits.job_timeout();
    let playgrounds = Arc::new(Playgrounds::new(
        backend.memory_source(),
        super::playground_caps(&settings.limits),
    ));
    let mut worker = Worker::new(backend, card.clone(), timeout, Arc::default());
    let name = settings.name.as_str();
    claim_name(db, name)?;
    db.run_blocking(|tx| register(tx, name, &card, false))?;
    tracing::info!(worker = name, backend = card.kind, device = %card.name, "worker serving the class queue");
    let playground_thread = {
        let (db, name, stop) = (db.clone(), name.to_string(), Arc::clone(stop));
        std::thread::Builder::new()
            .name("gpulab-playgrounds".into())
            .spawn(move || remote::serve(&db, &name, &playgrounds, &stop))
            .expect("the OS can start a thread")
    };
    let mut listener = Listener::new(CHANNEL);
    let mut failures = 0u32;
    let mut housekept = Instant::now() - Duration::from_secs(60);
    while !stop.load(Ordering::Relaxed) {
        // Once a second: put back jobs whose worker died, and say this one is alive.
        if housekept.elapsed() >= Duration::from_secs(1) {
            housekept = Instant::now();
            let kept = db.run_blocking(|tx| {
                let put_back = reap(tx)?;
                if put_back > 0 {
                    tracing::warn!(
                        jobs = put_back,
                        "jobs whose worker stopped were put back or failed"
                    );
                }
                register(tx, name, &card, false)
            });
            if let Err(error) = kept {
                tracing::warn!(%error, "the class queue is unreachable");
            }
        }
        // One statement, committed by itself: the claim is one round trip.
        let claimed = db.run_one(|tx| claim(tx, name, settings.lease));
        match claimed {
            Ok(Some(job)) => {
                failures = 0;
                run_one(db, settings, &card, &mut worker, &job);
            }
            Ok(None) => {
                failures = 0;
                listener.wait(db, Duration::from_millis(500));
            }
            Err(error) => {
                failures += 1;
                let pause = Duration::from_millis(100 * 2u64.pow(failures.min(6)))
                    .min(Duration::from_secs(5));
                tracing::warn!(%error, retry_in_ms = pause.as_millis() as u64, "the class queue is unreachable");
                std::thread::sleep(pause);
            }
        }
    }
    let _ = playground_thread.join();
    let _ = db.run_blocking(|tx| tx.execute("DELETE FROM workers WHERE name = ?1", params![name]));
    Ok(())
}

fn run_one(
    db: &Db,
    settings: &WorkerSettings,
    card: &DeviceCard,
    worker: &mut Worker,
    job: &Claimed,
) {
    let started = Instant::now();
    let renewing = Arc::new(AtomicBool::new(true));
    let renewer = {
        let (db, renewing, name, lease, id) = (
            db.clone(),
            Arc::clone(&renewing),
            settings.name.clone(),
            settings.lease,
            job.id,
        );
        std::thread::spawn(move || {
            let mut last = Instant::now();
            while renewing.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                if last.elapsed() < (lease / 3).min(Duration::from_secs(1)) {
                    continue;
                }
                last = Instant::now();
                match db.run_blocking(|tx| renew(tx, id, &name, lease)) {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::error!(
                            job = id,
                            "this worker lost its lease; its result will be discarded"
                        );
                        return;
                    }
                    Err(error) => tracing::warn!(%error, job = id, "could not renew the lease"),
                }
            }
        })
    };
    let mut state = match crate::experiments::find(&job.experiment)
        .ok_or_else(|| format!("unknown experiment `{}`", job.experiment))
        .and_then(|experiment| {
            let params: serde_json::Value =
                serde_json::from_str(&job.params).map_err(|e| e.to_string())?;
            experiment
                .prepare(Some(&params), &settings.limits)
                .map_err(|e| e.to_string())
        }) {
        Ok(mut prepared) => {
            prepared.prediction = job.prediction;
            worker.run(prepared)
        }
        Err(error) => JobState::Failed {
            error: format!("this worker cannot run the job: {error}"),
        },
    };
    if let JobState::Done { result } = &mut state
        && let Some(provenance) = result.get_mut("provenance").and_then(|p| p.as_object_mut())
    {
        provenance.insert("worker".into(), json!(settings.name));
    }
    renewing.store(false, Ordering::Relaxed);
    let _ = renewer.join();
    let report = RunReport::new(
        &job.owner,
        job.experiment.clone(),
        job.params.clone(),
        card,
        started.elapsed(),
        &state,
    );
    let mut delay = Duration::from_millis(100);
    loop {
        let store = |tx: &mut Tx| complete(tx, job, &settings.name, &state, report.clone());
        let stored = if report.prediction.is_some() {
            db.run_blocking(store)
        } else {
            db.run_one(store)
        };
        match stored {
            Ok(true) => return,
            Ok(false) => {
                tracing::error!(
                    job = job.id,
                    "the job was taken back before it finished; result discarded"
                );
                return;
            }
            Err(error) if started.elapsed() < settings.lease * 4 => {
                tracing::warn!(%error, job = job.id, "cannot store the result yet; retrying");
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err(error) => {
                tracing::error!(%error, job = job.id, "gave up storing a result; the job will be retried");
                return;
            }
        }
    }
}

/// A `LISTEN` connection on one channel (opened, and reopened after a failure, lazily).
pub(crate) struct Listener {
    channel: &'static str,
    client: Option<postgres::Client>,
}

impl Listener {
    /// A listener on `channel` (not connected yet).
    pub(crate) fn new(channel: &'static str) -> Self {
        Self {
            channel,
            client: None,
        }
    }

    /// Sleeps until something is announced on the channel or `timeout` passes.
    pub(crate) fn wait(&mut self, db: &Db, timeout: Duration) {
        if self.client.as_ref().is_none_or(postgres::Client::is_closed) {
            let channel = self.channel;
            self.client = db.postgres_url().and_then(|url| {
                let mut client = postgres::Client::connect(url, postgres::NoTls).ok()?;
                client.batch_execute(&format!("LISTEN {channel}")).ok()?;
                Some(client)
            });
        }
        let Some(client) = self.client.as_mut() else {
            std::thread::sleep(timeout);
            return;
        };
        use fallible_iterator::FallibleIterator;
        let woke = client.notifications().timeout_iter(timeout).next();
        // Several announcements may have piled up: one wake-up serves them all.
        let broken = match woke {
            Ok(Some(_)) => client.notifications().iter().count().is_err(),
            Ok(None) => false,
            Err(_) => true,
        };
        if broken {
            self.client = None;
        }
    }
}

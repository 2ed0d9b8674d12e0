//! The one worker loop: serves the experiment queue in the database ([`crate::db::jobs`])
//! on one [`Worker`]. `gpulab serve` runs it on a thread per `--gpu-concurrency` slot,
//! `gpulab worker` in its own process ([`super::worker_process`]); the loop is the same.
//!
//! Each turn: once a second, put back the jobs whose worker stopped renewing and say
//! this worker is alive; claim the next job; run it while a second thread renews the
//! lease; and end it with one call that records the result, the run history and the
//! scored prediction together ([`job_claims::complete`]), before the result is readable.
//! With no job waiting it sleeps until a submission wakes it: `LISTEN` on PostgreSQL
//! (submissions may come from any web node), the in-process [`Activity`] on SQLite. It
//! backs off while the database is away.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::worker::Worker;
use crate::config::Limits;
use crate::db::job_claims::{self, Claimed, FinishedRun};
use crate::db::jobs::CHANNEL;
use crate::db::listener::Listener;
use crate::db::{Db, DbError, Dialect};
use crate::gpu::DeviceCard;

/// A worker's settings.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// Its name in the queue (unique per worker).
    pub name: String,
    /// How long a claim holds without renewal.
    pub lease: Duration,
    /// The caps in force (job time limit, sizes).
    pub limits: Limits,
}

/// What this process's workers are doing, and the in-process wake-up a submission
/// sends them.
#[derive(Default)]
pub struct Activity {
    running: AtomicUsize,
    peak: AtomicUsize,
    submitted: Mutex<u64>,
    wake: Condvar,
}

impl Activity {
    /// Wakes the workers waiting for a job.
    pub fn notify(&self) {
        if let Ok(mut submitted) = self.submitted.lock() {
            *submitted += 1;
        }
        self.wake.notify_all();
    }

    /// Sleeps until [`Activity::notify`] or `timeout`.
    pub(crate) fn wait(&self, timeout: Duration) {
        let Ok(guard) = self.submitted.lock() else {
            return;
        };
        let seen = *guard;
        let _ = self
            .wake
            .wait_timeout_while(guard, timeout, |now| *now == seen);
    }

    /// Jobs this process's workers run now.
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Most jobs this process's workers ran at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }

    fn begin(&self) {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
    }

    fn end(&self) {
        self.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves the queue in `db` with `worker` until `stop` is set (then finishes the job in
/// hand). `card` is registered as this worker's device.
pub fn serve_jobs(
    db: &Db,
    settings: &WorkerSettings,
    card: &DeviceCard,
    worker: &mut Worker,
    activity: &Activity,
    stop: &AtomicBool,
) {
    let name = settings.name.as_str();
    let card_json = serde_json::to_string(card).unwrap_or_default();
    let mut listener = Listener::new(CHANNEL);
    let mut failures = 0u32;
    let mut housekept = Instant::now() - Duration::from_secs(60);
    while !stop.load(Ordering::Relaxed) {
        if housekept.elapsed() >= Duration::from_secs(1) {
            housekept = Instant::now();
            let kept = db.run_queue(|tx| {
                let put_back = job_claims::reap(tx)?;
                if put_back > 0 {
                    tracing::warn!(
                        jobs = put_back,
                        "jobs whose worker stopped were put back or failed"
                    );
                }
                job_claims::register(tx, name, card.kind.name(), &card_json, false)
            });
            if let Err(error) = kept {
                tracing::warn!(%error, "the experiment queue is unreachable");
            }
        }
        // One statement, committed by itself: the claim is one round trip.
        match db.run_one(|tx| job_claims::claim(tx, name, settings.lease)) {
            Ok(Some(job)) => {
                failures = 0;
                activity.begin();
                run_one(db, settings, card, worker, &job);
                activity.end();
            }
            Ok(None) => {
                failures = 0;
                match db.dialect() {
                    Dialect::Postgres => listener.wait(db, Duration::from_millis(500)),
                    Dialect::Sqlite => activity.wait(Duration::from_millis(500)),
                }
            }
            Err(error) => {
                failures += 1;
                let pause = Duration::from_millis(100 * 2u64.pow(failures.min(6)))
                    .min(Duration::from_secs(5));
                tracing::warn!(%error, retry_in_ms = pause.as_millis() as u64, "the experiment queue is unreachable");
                std::thread::sleep(pause);
            }
        }
    }
    let _ = db.run_queue(|tx| job_claims::unregister(tx, name));
}

/// Renews the lease on `job` every third of it (at most every second) until dropped.
struct Renewer {
    renewing: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Renewer {
    fn start(db: &Db, settings: &WorkerSettings, id: u64) -> Self {
        let renewing = Arc::new(AtomicBool::new(true));
        let (db, flag, name, lease) = (
            db.clone(),
            Arc::clone(&renewing),
            settings.name.clone(),
            settings.lease,
        );
        let thread = std::thread::spawn(move || {
            let mut last = Instant::now();
            while flag.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                if last.elapsed() < (lease / 3).min(Duration::from_secs(1)) {
                    continue;
                }
                last = Instant::now();
                match db.run_queue(|tx| job_claims::renew(tx, id, &name, lease)) {
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
        });
        Self {
            renewing,
            thread: Some(thread),
        }
    }
}

impl Drop for Renewer {
    fn drop(&mut self) {
        self.renewing.store(false, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs one claimed job and records how it ended.
fn run_one(
    db: &Db,
    settings: &WorkerSettings,
    card: &DeviceCard,
    worker: &mut Worker,
    job: &Claimed,
) {
    let started = Instant::now();
    let renewer = Renewer::start(db, settings, job.id);
    let outcome = crate::experiments::find(&job.experiment)
        .ok_or_else(|| format!("unknown experiment `{}`", job.experiment))
        .and_then(|experiment| {
            let params: serde_json::Value =
                serde_json::from_str(&job.params).map_err(|e| e.to_string())?;
            experiment
                .prepare(Some(&params), &settings.limits)
                .map_err(|e| format!("this worker cannot run the job: {e}"))
        })
        .and_then(|mut prepared| {
            prepared.prediction = job.prediction;
            worker.run(prepared)
        });
    drop(renewer);
    let (result, measured, lab) = match outcome {
        Ok(ran) => {
            let mut outcome = ran.outcome;
            outcome.provenance.worker = Some(settings.name.clone());
            let (json, measured, lab) = outcome.recorded();
            (Ok(json), measured, lab)
        }
        Err(error) => (Err(error), None, None),
    };
    let run = FinishedRun {
        result,
        measured,
        lab,
        backend: card.kind.name().to_string(),
        device: card.name.clone(),
        ran_for: started.elapsed(),
    };
    record(db, settings, job, &run, started);
}

/// Stores `run`, retrying while the database is briefly away (within the lease's
/// reach: after that the job goes back to the queue and runs again). A run that records
/// a learner's own work (a scored prediction, a lab attempt, a class round's reveal)
/// waits for the disk; any other run is queue state (see [`Db::run_queue`]).
fn record(db: &Db, settings: &WorkerSettings, job: &Claimed, run: &FinishedRun, started: Instant) {
    let mut delay = Duration::from_millis(100);
    loop {
        let store = |tx: &mut crate::db::Tx| job_claims::complete(tx, job, &settings.name, run);
        let stored: Result<bool, DbError> = if job_claims::keeps_learner_records(job, run) {
            db.run_blocking(store)
        } else {
            db.run_queue(store)
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

//! The experiment engine: the workers that serve the experiment queue in the database
//! ([`crate::db::jobs`]), each owning a [`backend`] (the GPU, or the CPU when there is
//! none), in both modes: `gpulab serve` runs them as threads ([`Engine::start`]),
//! `gpulab worker` as a process per GPU ([`worker_process`]), and a web node runs none
//! ([`Engine::web`]); all run the same [`worker_loop`]. By default one worker runs one
//! experiment at a time, so no measurement shares the GPU. Handlers submit validated
//! jobs here and read their state and the queue's figures through [`queue_view`]; a
//! finished run is recorded by the worker, in one transaction, before its result is
//! readable. The engine also decides where the allocator playgrounds live (they draw
//! on the same device); [`bench`] and [`selftest`] run experiments directly for the
//! command line.

pub mod backend;
pub mod bench;
pub mod first_contact;
pub mod outcome;
pub mod provenance;
pub mod queue_bench;
pub mod queue_view;
pub mod selftest;
pub mod worker;
pub mod worker_loop;
pub mod worker_process;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use backend::Backend;
use first_contact::FirstContact;
use worker::{SharedContext, Worker};
use worker_loop::{Activity, WorkerSettings};

use crate::config::Limits;
use crate::db::jobs::{self, NewJob};
pub use crate::db::jobs::{JobState, OwnerUsage, QueueStats, Refused};
use crate::db::{Db, DbError, job_claims, rounds};
use crate::experiments::Job;
use crate::gpu::card::cpu_card;
use crate::gpu::{DeviceCard, DeviceKind, doctor};
use crate::playground::pool::Source;
use crate::playground::remote::Home;
use crate::playground::{Caps, Playgrounds};

/// How long a claim of `serve`'s own workers holds without renewal (as `gpulab
/// worker`'s default): a job left running by a killed server runs again this long
/// after the next start.
pub const WORKER_LEASE: Duration = Duration::from_secs(10);

/// Playgrounds unused for this long are dropped and their memory released.
pub const PLAYGROUND_IDLE: Duration = Duration::from_secs(10 * 60);

/// The playground caps from the command line's limits.
pub fn playground_caps(limits: &Limits) -> Caps {
    Caps {
        per_student: limits.playground_per_student_bytes(),
        total: limits.playground_total_bytes(),
        per_address: limits.playground_per_address_bytes(),
        idle: PLAYGROUND_IDLE,
    }
}

/// The running engine: the queue in the database, the workers this process runs on it
/// (none on a web node), and the device they run on.
#[derive(Clone)]
pub struct Engine {
    db: Db,
    /// The device the workers opened (on a web node: the one a worker registered).
    pub card: Arc<DeviceCard>,
    /// The doctor report taken at start-up.
    pub doctor: Arc<doctor::Report>,
    /// The start-up self-test of the backend in use.
    pub first_contact: Arc<FirstContact>,
    /// The caps in force.
    pub limits: Arc<Limits>,
    /// This process's allocator playgrounds (empty on a web node).
    pub playgrounds: Arc<Playgrounds>,
    /// Where each student's playground lives: here, or in a worker.
    pub playground: Arc<Home>,
    /// This device's ceilings, measured by the first worker once it opened the device
    /// (empty until then, and on a web node: [`Engine::ceilings`] reads a worker's).
    pub ceilings: Arc<OnceLock<crate::experiments::ceilings::Ceilings>>,
    local: Arc<Local>,
}

/// What only this process knows: its workers' activity, whether it still takes jobs,
/// and the refusals it answered.
struct Local {
    activity: Arc<Activity>,
    /// Set when the last clone of the engine goes: its worker threads stop.
    stop: Arc<AtomicBool>,
    closed: AtomicBool,
    /// Held shared by each submission from its `closed` check to its commit, and
    /// exclusively by [`Engine::close`]: a job is either in the queue before close fails
    /// the waiting ones (so it fails with them) or refused, never queued after.
    submissions: tokio::sync::RwLock<()>,
    runs_workers: bool,
    /// When this engine started (the database's clock): the outcomes it counts are of
    /// the jobs finished since, as a counter that starts again with the process.
    started_secs: f64,
    rejected: AtomicU64,
    /// Refusals for a full queue per student (at most [`MAX_REFUSED_OWNERS`] students).
    rejected_by: Mutex<HashMap<String, u64>>,
}

/// Students whose refusals the engine counts (a flood of new cookies cannot grow it).
const MAX_REFUSED_OWNERS: usize = 10_000;

impl Drop for Local {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.activity.notify();
    }
}

/// The database's clock now (0 when it cannot be read), read on a plain thread: the
/// PostgreSQL client must not block inside tokio's.
fn clock(db: &Db) -> f64 {
    let db = db.clone();
    std::thread::spawn(move || db.run_blocking(crate::db::clock::epoch))
        .join()
        .ok()
        .and_then(Result::ok)
        .unwrap_or(0.0)
}

/// A worker thread's name in the queue: unique per process and slot.
fn thread_name(index: usize) -> String {
    let host = crate::host::host_name("serve");
    format!("{host}-serve-{}-{index}", std::process::id())
}

impl Engine {
    /// `gpulab serve`: starts the workers (`limits.gpu_concurrency` threads, each with
    /// its own backend) on the queue in `db`. The first opens the GPU and runs the
    /// start-up self-test; the others open their own handles only when it passed, and a
    /// worker whose handle fails its self-test does not serve, so no server ever runs
    /// part GPU, part CPU.
    pub fn start(limits: Limits, db: Db) -> Self {
        let started_secs = clock(&db);
        let context = Arc::new(SharedContext::default());
        let activity = Arc::new(Activity::default());
        let stop = Arc::new(AtomicBool::new(false));
        let settings = |index| WorkerSettings {
            name: thread_name(index),
            lease: WORKER_LEASE,
            limits: limits.clone(),
        };
        let (tx, rx) = mpsc::channel();
        let ceilings = Arc::new(OnceLock::new());
        {
            let (db, settings, context) = (db.clone(), settings(0), Arc::clone(&context));
            let (activity, stop) = (Arc::clone(&activity), Arc::clone(&stop));
            let measured = Arc::clone(&ceilings);
            std::thread::Builder::new()
                .name("gpulab-engine-0".into())
                .spawn(move || {
                    let report = doctor::run();
                    let (mut backend, card, contact) = Backend::open();
                    let _ = tx.send((card.clone(), report, backend.memory_source(), contact));
                    // Issue 27 §3: this device's ceilings, once, before the first job.
                    let _ = measured.set(crate::experiments::ceilings::calibrate(backend.gpu()));
                    let timeout = settings.limits.job_timeout();
                    let mut worker = Worker::new(backend, card.clone(), timeout, context);
                    worker_loop::serve_jobs(&db, &settings, &card, &mut worker, &activity, &stop);
                })
                .expect("the OS can start the engine thread");
        }
        let (card, mut report, source, contact) = rx.recv().unwrap_or_else(|_| {
            (
                cpu_card("the engine failed to start"),
                doctor::run(),
                Source::Host,
                FirstContact::default(),
            )
        });
        if report.backend.is_cuda() && !card.kind.is_cuda() {
            // Every layer works, but the GPU computed something wrong at start-up.
            report.backend = card.kind;
            report.verdict = format!(
                "Every layer loads, but {}. Experiments run on the CPU.",
                first_contact::reason(&FirstContact::new(
                    DeviceKind::Cuda,
                    contact.rejected_gpu.clone()
                ))
            );
        }
        for index in 1..usize::from(limits.gpu_concurrency.max(1)) {
            let (db, settings, context) = (db.clone(), settings(index), Arc::clone(&context));
            let (activity, stop, card) = (Arc::clone(&activity), Arc::clone(&stop), card.clone());
            std::thread::Builder::new()
                .name(format!("gpulab-engine-{index}"))
                .spawn(move || {
                    let Some(backend) = Backend::open_like(&card) else {
                        tracing::error!(worker = index, "this worker's GPU handle failed to open or self-test; it does not serve");
                        return;
                    };
                    let timeout = settings.limits.job_timeout();
                    let mut worker = Worker::new(backend, card.clone(), timeout, context);
                    worker_loop::serve_jobs(&db, &settings, &card, &mut worker, &activity, &stop);
                })
                .expect("the OS can start the engine thread");
        }
        let playgrounds = Arc::new(Playgrounds::new(source, playground_caps(&limits)));
        tracing::info!(backend = %card.kind, device = %card.name, workers = limits.gpu_concurrency, "experiment engine ready");
        Self {
            db,
            card: Arc::new(card),
            doctor: Arc::new(report),
            first_contact: Arc::new(contact),
            limits: Arc::new(limits),
            playground: Arc::new(Home::Here(Arc::clone(&playgrounds))),
            playgrounds,
            ceilings,
            local: Arc::new(Local {
                activity,
                stop,
                closed: AtomicBool::new(false),
                submissions: tokio::sync::RwLock::new(()),
                runs_workers: true,
                started_secs,
                rejected: AtomicU64::new(0),
                rejected_by: Mutex::default(),
            }),
        }
    }

    /// A web node's engine (`serve --role web`): jobs go to the class's queue in `db`
    /// (PostgreSQL), which `gpulab worker` processes serve; the device shown is the one
    /// the workers registered (the CPU card, saying so, until one has). It runs no
    /// experiment and holds no playground itself.
    pub fn web(limits: Limits, db: Db) -> Self {
        let started_secs = clock(&db);
        let reader = db.clone();
        let registered = std::thread::spawn(move || reader.run_blocking(job_claims::newest_card))
            .join()
            .ok()
            .and_then(Result::ok)
            .flatten()
            .and_then(|text| serde_json::from_str::<DeviceCard>(&text).ok());
        let card = registered.unwrap_or_else(|| {
            let mut card = cpu_card("no GPU worker has joined the class queue yet");
            card.note = "No worker has joined the class queue yet: start `gpulab worker --gpu N` on each GPU box (the device shown updates when this web node restarts).".into();
            card
        });
        let playgrounds = Arc::new(Playgrounds::new(Source::Host, playground_caps(&limits)));
        tracing::info!(backend = %card.kind, device = %card.name, "web node: experiments go to the class queue");
        Self {
            playground: Arc::new(Home::Workers(db.clone())),
            db,
            card: Arc::new(card),
            doctor: Arc::new(doctor::run()),
            first_contact: Arc::new(FirstContact::default()),
            limits: Arc::new(limits),
            playgrounds,
            ceilings: Arc::default(),
            local: Arc::new(Local {
                activity: Arc::default(),
                stop: Arc::default(),
                closed: AtomicBool::new(false),
                submissions: tokio::sync::RwLock::new(()),
                runs_workers: false,
                started_secs,
                rejected: AtomicU64::new(0),
                rejected_by: Mutex::default(),
            }),
        }
    }

    /// Queues a job for `owner` (a student id) at `address`; returns its job id and
    /// position.
    pub async fn submit(
        &self,
        owner: &str,
        address: Option<std::net::IpAddr>,
        job: Job,
    ) -> Result<(u64, usize), Refused> {
        self.enqueue(owner, address, job, None).await
    }

    /// Queues `job` for class round `round` (owned by `owner`), turning the round
    /// `running` in the same transaction; the worker that completes the job reveals the
    /// round as it records it, so the round needs nothing more from this process.
    pub async fn submit_round(
        &self,
        owner: &str,
        round: i64,
        job: Job,
    ) -> Result<(u64, usize), Refused> {
        self.enqueue(owner, None, job, Some(round)).await
    }

    async fn enqueue(
        &self,
        owner: &str,
        address: Option<std::net::IpAddr>,
        job: Job,
        round: Option<i64>,
    ) -> Result<(u64, usize), Refused> {
        let _open = self.local.submissions.read().await;
        if self.local.closed.load(Ordering::Relaxed) {
            return Err(Refused::Closed);
        }
        let student = owner;
        let (owner, limits, db) = (owner.to_string(), Arc::clone(&self.limits), self.db.clone());
        let params = job.params.to_string();
        let (experiment, prediction) = (job.experiment, job.prediction);
        let submitted = tokio::task::spawn_blocking(move || {
            db.run_queue(|tx| {
                let new = NewJob {
                    experiment,
                    params,
                    prediction,
                    round,
                };
                let queued = jobs::submit(tx, &owner, address, &new, &limits)?;
                if let (Ok(_), Some(round)) = (&queued, round) {
                    rounds::set_status(tx, round, "running", None)?;
                }
                Ok(queued)
            })
        })
        .await
        .map_err(|e| DbError::Task(e.to_string()))
        .and_then(|r| r);
        let outcome = submitted.unwrap_or_else(|e| Err(Refused::Unavailable(e.to_string())));
        match &outcome {
            Ok(_) => self.local.activity.notify(),
            Err(Refused::Full { .. }) => {
                self.local.rejected.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut by) = self.local.rejected_by.lock()
                    && (by.len() < MAX_REFUSED_OWNERS || by.contains_key(student))
                {
                    *by.entry(student.to_string()).or_default() += 1;
                }
            }
            Err(_) => {}
        }
        outcome
    }

    /// Stops taking experiments (shutdown). A server that runs its own workers fails
    /// the waiting ones, since nothing will run them; a web node leaves them to the
    /// class's workers. Waits for the submissions in flight to commit first.
    pub async fn close(&self) {
        let _shut = self.local.submissions.write().await;
        self.local.closed.store(true, Ordering::Relaxed);
        if self.local.runs_workers {
            let failed = self
                .db
                .run(|tx| {
                    jobs::fail_waiting(
                        tx,
                        "the server is shutting down; your experiment did not run — try again when it is back",
                    )
                })
                .await;
            if let Err(error) = failed {
                tracing::warn!(%error, "could not fail the waiting experiments");
            }
        }
    }

    /// Blocks until this process's workers run no experiment, or `timeout` passes;
    /// true when idle.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while self.local.activity.running() > 0 {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }
}

#[cfg(test)]
mod tests;

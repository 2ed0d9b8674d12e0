//! The experiment engine: a bounded [`queue`] in front of worker threads, each owning a
//! [`backend`] (the GPU, or the CPU when there is none). Validated jobs come in from
//! the web layer; results go back as JSON with their [`provenance`]. By default one
//! worker runs one experiment at a time, so no measurement shares the GPU. The engine
//! also owns the allocator playgrounds (they draw on the same device); [`bench`] and
//! [`selftest`] run experiments directly for the command line.

pub mod backend;
pub mod bench;
pub mod first_contact;
pub mod provenance;
pub mod queue;
pub mod queue_bench;
pub mod selftest;
pub mod shared_queue;
pub mod shared_worker;
pub mod worker;

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backend::Backend;
use first_contact::FirstContact;
use queue::{JobState, OwnerUsage, Queue, QueueStats, Refused};
use worker::{SharedContext, Worker};

use crate::config::Limits;
use crate::db::Db;
use crate::experiments::Job;
use crate::gpu::card::cpu_card;
use crate::gpu::{DeviceCard, doctor};
use crate::playground::pool::Source;
use crate::playground::{Caps, Playgrounds};

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

/// What each worker is running: experiment name and parameters, by job id (for the
/// run history, which hears of a job only by id when it finishes).
type RunningLabels = Arc<Mutex<HashMap<u64, (String, String)>>>;

/// One experiment that ran, for the history the web layer keeps in the database.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The student who asked for it.
    pub owner: String,
    /// The experiment's name.
    pub experiment: String,
    /// Its validated parameters, as compact JSON.
    pub params: String,
    /// `cuda` or `cpu`.
    pub backend: String,
    /// The device's name.
    pub device: String,
    /// Time on the worker.
    pub ran_for: Duration,
    /// What went wrong, when it failed.
    pub error: Option<String>,
    /// The learner's prediction and the measurement it was scored against, when they
    /// made one and the run measured it.
    pub prediction: Option<PredictionReport>,
    /// The quantity the run measured and its value (`result.measured`), with or
    /// without a prediction.
    pub measured: Option<(String, f64)>,
}

/// A scored prediction, as a finished run carries it (`result.measured` and
/// `result.prediction`).
#[derive(Debug, Clone, PartialEq)]
pub struct PredictionReport {
    /// The quantity's key (`transfer.pinned_h2d_gbps`).
    pub quantity: String,
    /// Its unit.
    pub unit: String,
    /// What the learner predicted.
    pub predicted: f64,
    /// What the run measured.
    pub measured: f64,
}

impl RunReport {
    /// The report of job `state`, run for `owner` on the device `card` describes.
    pub fn new(
        owner: &str,
        experiment: String,
        params: String,
        card: &DeviceCard,
        ran_for: Duration,
        state: &JobState,
    ) -> Self {
        let result = match state {
            JobState::Done { result } => Some(result),
            _ => None,
        };
        Self {
            owner: owner.to_string(),
            experiment,
            params,
            backend: card.kind.to_string(),
            device: card.name.clone(),
            ran_for,
            error: match state {
                JobState::Failed { error } => Some(error.clone()),
                _ => None,
            },
            prediction: result.and_then(PredictionReport::from_result),
            measured: result.and_then(|r| {
                let m = r.get("measured")?;
                Some((
                    m.get("quantity")?.as_str()?.to_string(),
                    m.get("value")?.as_f64()?,
                ))
            }),
        }
    }
}

impl PredictionReport {
    /// Reads it off a finished result; `None` when the result has no prediction.
    pub fn from_result(result: &serde_json::Value) -> Option<Self> {
        let measured = result.get("measured")?;
        let prediction = result.get("prediction")?;
        Some(Self {
            quantity: measured.get("quantity")?.as_str()?.to_string(),
            unit: measured.get("unit")?.as_str()?.to_string(),
            predicted: prediction.get("predicted")?.as_f64()?,
            measured: measured.get("value")?.as_f64()?,
        })
    }
}

/// Runs `worker` on `job`, noting what it runs so the finish listener can name it.
fn run_labelled(worker: &mut Worker, labels: &RunningLabels, id: u64, job: Job) -> JobState {
    if let Ok(mut labels) = labels.lock() {
        labels.insert(id, (job.experiment.to_string(), job.params.to_string()));
    }
    worker.run(job)
}

/// The running engine: the worker threads, their queue, and what they run on.
#[derive(Clone)]
pub struct Engine {
    jobs: Jobs,
    /// The device the workers opened.
    pub card: Arc<DeviceCard>,
    /// The doctor report taken at start-up.
    pub doctor: Arc<doctor::Report>,
    /// The start-up self-test of the backend in use.
    pub first_contact: Arc<FirstContact>,
    /// The caps in force.
    pub limits: Arc<Limits>,
    /// Every student's allocator playground.
    pub playgrounds: Arc<Playgrounds>,
    labels: RunningLabels,
    measured: Arc<std::sync::OnceLock<MeasuredListener>>,
}

/// Told of every measured value: the quantity, the run's parameters (compact JSON) and
/// the value.
type MeasuredListener = Box<dyn Fn(&str, &str, f64) + Send + Sync>;

/// Where jobs wait: this process's own queue and workers, or the class-wide queue in
/// PostgreSQL that separate worker processes serve (`serve --role web`).
#[derive(Clone)]
enum Jobs {
    Local(Arc<Queue<Job>>),
    Shared(Arc<SharedJobs>),
}

/// The class queue's stats, usage per student and estimated wait, as last read.
type QueueFigures = (QueueStats, Vec<(String, OwnerUsage)>, f64);

/// A web node's view of the shared queue: the database, and the queue's figures as last
/// read (refreshed every second on a thread, so `/metrics` and pages never wait on it).
struct SharedJobs {
    db: Db,
    /// Where the measured values of finished jobs were last read up to (the database's
    /// clock, seconds).
    seen_until: Mutex<f64>,
    snapshot: Mutex<QueueFigures>,
    closed: std::sync::atomic::AtomicBool,
}

impl Engine {
    /// Starts the workers (`limits.gpu_concurrency` of them, each with its own
    /// backend). The first opens the GPU and runs the start-up self-test; the others
    /// open their own handles only when it passed, and a worker whose handle fails its
    /// self-test does not serve, so no server ever runs part GPU, part CPU.
    pub fn start(limits: Limits) -> Self {
        let queue: Arc<Queue<Job>> = Queue::new(
            limits.queue_length,
            usize::try_from(limits.pending_per_student).unwrap_or(usize::MAX),
            usize::try_from(limits.pending_per_address).unwrap_or(usize::MAX),
        );
        let shared = Arc::new(SharedContext::default());
        let timeout = limits.job_timeout();
        let (tx, rx) = mpsc::channel();
        let labels = RunningLabels::default();
        let first_labels = Arc::clone(&labels);
        let first = Arc::clone(&queue);
        let first_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("gpulab-engine-0".into())
            .spawn(move || {
                let report = doctor::run();
                let (backend, card, contact) = Backend::open();
                let _ = tx.send((card.clone(), report, backend.memory_source(), contact));
                let mut worker = Worker::new(backend, card, timeout, first_shared);
                queue::spawn_worker(first, move |id, job| {
                    run_labelled(&mut worker, &first_labels, id, job)
                });
            })
            .expect("the OS can start the engine thread");
        let (card, mut report, source, contact) = rx.recv().unwrap_or_else(|_| {
            (
                cpu_card("the engine failed to start"),
                doctor::run(),
                Source::Host,
                FirstContact::default(),
            )
        });
        if report.backend == "cuda" && card.kind != "cuda" {
            // Every layer works, but the GPU computed something wrong at start-up.
            report.backend = card.kind;
            report.verdict = format!(
                "Every layer loads, but {}. Experiments run on the CPU.",
                first_contact::reason(&FirstContact::new("cuda", contact.rejected_gpu.clone()))
            );
        }
        for index in 1..usize::from(limits.gpu_concurrency.max(1)) {
            let (queue, shared, card) = (Arc::clone(&queue), Arc::clone(&shared), card.clone());
            let labels = Arc::clone(&labels);
            std::thread::Builder::new()
                .name(format!("gpulab-engine-{index}"))
                .spawn(move || {
                    let Some(backend) = Backend::open_like(&card) else {
                        tracing::error!(worker = index, "this worker's GPU handle failed to open or self-test; it does not serve");
                        return;
                    };
                    let mut worker = Worker::new(backend, card, timeout, shared);
                    queue::spawn_worker(queue, move |id, job| {
                        run_labelled(&mut worker, &labels, id, job)
                    });
                })
                .expect("the OS can start the engine thread");
        }
        let playgrounds = Playgrounds::new(source, playground_caps(&limits));
        tracing::info!(backend = card.kind, device = %card.name, workers = limits.gpu_concurrency, "experiment engine ready");
        Self {
            jobs: Jobs::Local(queue),
            card: Arc::new(card),
            doctor: Arc::new(report),
            first_contact: Arc::new(contact),
            limits: Arc::new(limits),
            playgrounds: Arc::new(playgrounds),
            labels,
            measured: Arc::default(),
        }
    }

    /// A web node's engine (`serve --role web`): jobs go to the class-wide queue in
    /// `db` (PostgreSQL), which `gpulab worker` processes serve; the device shown is the
    /// one the workers registered (the CPU card, saying so, until one has). It runs no
    /// experiment itself; the allocator playground is this node's host memory (see
    /// `docker/README.md`).
    pub fn web(limits: Limits, db: Db) -> Self {
        let reader = db.clone();
        let registered = std::thread::spawn(move || reader.run_blocking(shared_worker::class_card))
            .join()
            .ok()
            .and_then(Result::ok)
            .flatten();
        let card = registered.unwrap_or_else(|| {
            let mut card = cpu_card("no GPU worker has joined the class queue yet");
            card.note = "No worker has joined the class queue yet: start `gpulab worker --gpu N` on each GPU box (the device shown updates when this web node restarts).".into();
            card
        });
        let shared = Arc::new(SharedJobs {
            db,
            seen_until: Mutex::new(0.0),
            snapshot: Mutex::default(),
            closed: std::sync::atomic::AtomicBool::new(false),
        });
        let measured: Arc<std::sync::OnceLock<MeasuredListener>> = Arc::default();
        let refresher = Arc::downgrade(&shared);
        let listener = Arc::clone(&measured);
        std::thread::Builder::new()
            .name("gpulab-queue-figures".into())
            .spawn(move || {
                while let Some(shared) = refresher.upgrade() {
                    if let Err(error) = shared.refresh() {
                        tracing::warn!(%error, "cannot read the class queue's figures");
                    }
                    if let Some(listener) = listener.get()
                        && let Err(error) = shared.read_measurements(listener)
                    {
                        tracing::warn!(%error, "cannot read the class queue's measurements");
                    }
                    drop(shared);
                    std::thread::sleep(Duration::from_secs(1));
                }
            })
            .expect("the OS can start a thread");
        let playgrounds = Playgrounds::new(Source::Host, playground_caps(&limits));
        tracing::info!(backend = card.kind, device = %card.name, "web node: experiments go to the class queue");
        Self {
            jobs: Jobs::Shared(shared),
            card: Arc::new(card),
            doctor: Arc::new(doctor::run()),
            first_contact: Arc::new(FirstContact::default()),
            limits: Arc::new(limits),
            playgrounds: Arc::new(playgrounds),
            labels: RunningLabels::default(),
            measured,
        }
    }

    /// Calls `record` for every experiment that runs to an end, on the worker's thread
    /// and before its result is readable (once per engine; later calls are ignored).
    pub fn on_run_finished(&self, record: impl Fn(RunReport) + Send + Sync + 'static) {
        let (labels, card) = (Arc::clone(&self.labels), Arc::clone(&self.card));
        let measured = Arc::clone(&self.measured);
        let Jobs::Local(queue) = &self.jobs else {
            // Shared-queue workers record their runs themselves (shared_worker).
            return;
        };
        queue.on_finish(Box::new(move |finished| {
            let label = labels.lock().ok().and_then(|mut l| l.remove(&finished.id));
            let Some((experiment, params)) = label else {
                return;
            };
            let report = RunReport::new(
                finished.owner,
                experiment,
                params,
                &card,
                finished.ran_for,
                finished.state,
            );
            if let (Some(listener), Some((quantity, value))) = (measured.get(), &report.measured) {
                listener(quantity, &report.params, *value);
            }
            record(report);
        }));
    }

    /// Calls `listener` with every value an experiment measures, wherever it ran (once
    /// per engine; later calls are ignored). With the class queue, a web node reads the
    /// values of every worker's finished jobs, within a second of their end.
    pub fn on_measured(&self, listener: impl Fn(&str, &str, f64) + Send + Sync + 'static) {
        let _ = self.measured.set(Box::new(listener));
    }

    /// Queues a job for `owner` (a student id) at `address`; returns its job id and
    /// position.
    pub async fn submit(
        &self,
        owner: &str,
        address: Option<std::net::IpAddr>,
        job: Job,
    ) -> Result<(u64, usize), Refused> {
        match &self.jobs {
            Jobs::Local(queue) => queue.submit(owner, address, job),
            Jobs::Shared(shared) => {
                if shared.closed.load(std::sync::atomic::Ordering::Relaxed) {
                    return Err(Refused::Closed);
                }
                let (owner, limits) = (owner.to_string(), Arc::clone(&self.limits));
                let params = job.params.to_string();
                let (experiment, prediction) = (job.experiment, job.prediction);
                let submitted = shared
                    .db
                    .run(move |tx| {
                        let new = shared_queue::NewJob {
                            experiment,
                            params,
                            prediction,
                        };
                        shared_queue::submit(tx, &owner, address, &new, &limits)
                    })
                    .await;
                submitted.unwrap_or_else(|e| Err(Refused::Unavailable(e.to_string())))
            }
        }
    }

    /// Queue-wide figures (depth, running, outcomes).
    pub fn stats(&self) -> QueueStats {
        match &self.jobs {
            Jobs::Local(queue) => queue.stats(),
            Jobs::Shared(shared) => shared.snapshot().0,
        }
    }

    /// Each student's use of the workers, busiest first.
    pub fn usage(&self) -> Vec<(String, OwnerUsage)> {
        match &self.jobs {
            Jobs::Local(queue) => queue.usage(),
            Jobs::Shared(shared) => shared.snapshot().1,
        }
    }

    /// Waits (polling every 100 ms) until job `id` has finished, or `deadline` passed;
    /// the final state, or what it was at the deadline (`None`: no such job).
    pub async fn finished(
        &self,
        id: u64,
        deadline: Option<std::time::Instant>,
    ) -> Option<JobState> {
        loop {
            let past = deadline.is_some_and(|d| std::time::Instant::now() >= d);
            match self.job(id, None).await {
                Ok(Some(JobState::Queued { .. } | JobState::Running)) if !past => {}
                Ok(state) => return state,
                // The shared queue's database is briefly away: keep waiting.
                Err(_) if !past => {}
                Err(_) => return None,
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops taking experiments and fails the waiting ones (shutdown). A web node on the
    /// shared queue only stops taking new ones: the workers run what is queued.
    pub fn close(&self) {
        match &self.jobs {
            Jobs::Local(queue) => queue.close(
                "the server is shutting down; your experiment did not run — try again when it is back",
            ),
            Jobs::Shared(shared) => shared.closed.store(true, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// Blocks until no experiment runs, or `timeout` passes; true when idle.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        match &self.jobs {
            Jobs::Local(queue) => queue.wait_idle(timeout),
            Jobs::Shared(_) => true,
        }
    }

    /// A job's state, for its owner (`None`: anyone, the instructor); an error when the
    /// shared queue's database cannot be read.
    pub async fn job(&self, id: u64, owner: Option<&str>) -> Result<Option<JobState>, String> {
        match &self.jobs {
            Jobs::Local(queue) => Ok(queue.state(id, owner)),
            Jobs::Shared(shared) => {
                let owner = owner.map(str::to_string);
                shared
                    .db
                    .run(move |tx| shared_queue::state(tx, id, owner.as_deref()))
                    .await
                    .map_err(|e| e.to_string())
            }
        }
    }

    /// Jobs waiting now.
    pub fn queue_depth(&self) -> usize {
        match &self.jobs {
            Jobs::Local(queue) => queue.depth(),
            Jobs::Shared(shared) => shared.snapshot().0.depth,
        }
    }

    /// Estimated wait for a new job, in seconds.
    pub fn estimated_wait_secs(&self) -> f64 {
        match &self.jobs {
            Jobs::Local(queue) => queue.estimated_wait_secs(),
            Jobs::Shared(shared) => shared.snapshot().2,
        }
    }

    /// Whether jobs go to the class-wide queue in PostgreSQL (a web node).
    pub fn is_shared(&self) -> bool {
        matches!(self.jobs, Jobs::Shared(_))
    }
}

impl SharedJobs {
    /// Hands the measured values of jobs finished since the last call to `listener`.
    fn read_measurements(&self, listener: &MeasuredListener) -> Result<(), crate::db::DbError> {
        let since = self.seen_until.lock().map(|s| *s).unwrap_or(0.0);
        let rows = self.db.run_blocking(|tx| {
            tx.query(
                "SELECT params, result, finished_at FROM jobs WHERE status = 'done' AND finished_at > ?1
                 ORDER BY finished_at LIMIT 500",
                crate::params![since],
            )
        })?;
        let mut until = since;
        for row in rows {
            let (params, result, finished): (String, String, f64) =
                (row.get(0)?, row.get(1)?, row.get(2)?);
            until = until.max(finished);
            let result: serde_json::Value = serde_json::from_str(&result).unwrap_or_default();
            let measured = result.get("measured");
            let quantity = measured
                .and_then(|m| m.get("quantity"))
                .and_then(|q| q.as_str());
            let value = measured
                .and_then(|m| m.get("value"))
                .and_then(serde_json::Value::as_f64);
            if let (Some(quantity), Some(value)) = (quantity, value) {
                listener(quantity, &params, value);
            }
        }
        if let Ok(mut seen) = self.seen_until.lock() {
            *seen = until;
        }
        Ok(())
    }

    fn snapshot(&self) -> QueueFigures {
        self.snapshot.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Reads the queue's figures again.
    fn refresh(&self) -> Result<(), crate::db::DbError> {
        let read = self.db.run_blocking(|tx| {
            Ok((
                shared_queue::stats(tx)?,
                shared_queue::usage(tx)?,
                shared_queue::estimated_wait_secs(tx)?,
            ))
        })?;
        if let Ok(mut snapshot) = self.snapshot.lock() {
            *snapshot = read;
        }
        Ok(())
    }
}

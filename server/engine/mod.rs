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
pub mod selftest;
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
use crate::experiments::Job;
use crate::gpu::card::cpu_card;
use crate::gpu::{DeviceCard, doctor};
use crate::playground::pool::Source;
use crate::playground::{Caps, Playgrounds};

/// Playgrounds unused for this long are dropped and their memory released.
pub const PLAYGROUND_IDLE: Duration = Duration::from_secs(10 * 60);

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
    queue: Arc<Queue<Job>>,
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
        let playgrounds = Playgrounds::new(
            source,
            Caps {
                per_student: limits.playground_per_student_bytes(),
                total: limits.playground_total_bytes(),
                per_address: limits.playground_per_address_bytes(),
                idle: PLAYGROUND_IDLE,
            },
        );
        tracing::info!(backend = card.kind, device = %card.name, workers = limits.gpu_concurrency, "experiment engine ready");
        Self {
            queue,
            card: Arc::new(card),
            doctor: Arc::new(report),
            first_contact: Arc::new(contact),
            limits: Arc::new(limits),
            playgrounds: Arc::new(playgrounds),
            labels,
        }
    }

    /// Calls `record` for every experiment that runs to an end, on the worker's thread
    /// and before its result is readable (once per engine; later calls are ignored).
    pub fn on_run_finished(&self, record: impl Fn(RunReport) + Send + Sync + 'static) {
        let (labels, card) = (Arc::clone(&self.labels), Arc::clone(&self.card));
        self.queue.on_finish(Box::new(move |finished| {
            let label = labels.lock().ok().and_then(|mut l| l.remove(&finished.id));
            let Some((experiment, params)) = label else {
                return;
            };
            record(RunReport {
                owner: finished.owner.to_string(),
                experiment,
                params,
                backend: card.kind.to_string(),
                device: card.name.clone(),
                ran_for: finished.ran_for,
                error: match finished.state {
                    JobState::Failed { error } => Some(error.clone()),
                    _ => None,
                },
                prediction: match finished.state {
                    JobState::Done { result } => PredictionReport::from_result(result),
                    _ => None,
                },
                measured: match finished.state {
                    JobState::Done { result } => result.get("measured").and_then(|m| {
                        Some((
                            m.get("quantity")?.as_str()?.to_string(),
                            m.get("value")?.as_f64()?,
                        ))
                    }),
                    _ => None,
                },
            });
        }));
    }

    /// Queues a job for `owner` (a student id) at `address`; returns its job id and
    /// position.
    pub fn submit(
        &self,
        owner: &str,
        address: Option<std::net::IpAddr>,
        job: Job,
    ) -> Result<(u64, usize), Refused> {
        self.queue.submit(owner, address, job)
    }

    /// Queue-wide figures (depth, running, outcomes).
    pub fn stats(&self) -> QueueStats {
        self.queue.stats()
    }

    /// Each student's use of the workers, busiest first.
    pub fn usage(&self) -> Vec<(String, OwnerUsage)> {
        self.queue.usage()
    }

    /// Waits (polling every 100 ms) until job `id` has finished, or `deadline` passed;
    /// the final state, or what it was at the deadline (`None`: no such job).
    pub async fn finished(
        &self,
        id: u64,
        deadline: Option<std::time::Instant>,
    ) -> Option<JobState> {
        loop {
            let state = self.job(id, None)?;
            let waiting = matches!(state, JobState::Queued { .. } | JobState::Running);
            if !waiting || deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                return Some(state);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops taking experiments and fails the waiting ones (shutdown).
    pub fn close(&self) {
        self.queue.close(
            "the server is shutting down; your experiment did not run — try again when it is back",
        );
    }

    /// Blocks until no experiment runs, or `timeout` passes; true when idle.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.queue.wait_idle(timeout)
    }

    /// A job's state, for its owner (`None`: anyone, the instructor).
    pub fn job(&self, id: u64, owner: Option<&str>) -> Option<JobState> {
        self.queue.state(id, owner)
    }

    /// Jobs waiting now.
    pub fn queue_depth(&self) -> usize {
        self.queue.depth()
    }

    /// Estimated wait for a new job, in seconds.
    pub fn estimated_wait_secs(&self) -> f64 {
        self.queue.estimated_wait_secs()
    }
}

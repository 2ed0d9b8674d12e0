//! The experiment engine: a bounded [`queue`] in front of worker threads, each owning a
//! [`backend`] (the GPU, or the CPU when there is none). Validated jobs come in from
//! the web layer; results go back as JSON with their [`provenance`]. By default one
//! worker runs one experiment at a time, so no measurement shares the GPU. The engine
//! also owns the allocator playgrounds (they draw on the same device); [`bench`] and
//! [`selftest`] run experiments directly for the command line.

pub mod backend;
pub mod bench;
pub mod provenance;
pub mod queue;
pub mod selftest;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use backend::Backend;
use queue::{JobState, OwnerUsage, Queue, QueueStats, Refused};

use crate::config::Limits;
use crate::experiments::Job;
use crate::gpu::card::cpu_card;
use crate::gpu::{DeviceCard, doctor};
use crate::playground::Playgrounds;
use crate::playground::pool::Source;

/// Playgrounds unused for this long are dropped and their memory released.
pub const PLAYGROUND_IDLE: Duration = Duration::from_secs(30 * 60);

/// The running engine: the worker threads, their queue, and what they run on.
#[derive(Clone)]
pub struct Engine {
    queue: Arc<Queue<Job>>,
    /// The device the workers opened.
    pub card: Arc<DeviceCard>,
    /// The doctor report taken at start-up.
    pub doctor: Arc<doctor::Report>,
    /// The caps in force.
    pub limits: Arc<Limits>,
    /// Every student's allocator playground.
    pub playgrounds: Arc<Playgrounds>,
}

impl Engine {
    /// Starts the workers (`limits.gpu_concurrency` of them, each with its own backend),
    /// which open the GPU if they can (or use the CPU).
    pub fn start(limits: Limits) -> Self {
        let queue: Arc<Queue<Job>> = Queue::new(limits.queue_length);
        let (tx, rx) = mpsc::channel();
        for worker in 0..usize::from(limits.gpu_concurrency.max(1)) {
            let timeout = limits.job_timeout();
            let worker_queue = Arc::clone(&queue);
            let tx = tx.clone();
            std::thread::Builder::new()
                .name(format!("gpulab-engine-{worker}"))
                .spawn(move || {
                    let report = doctor::run();
                    let (mut backend, card) = Backend::open();
                    let _ = tx.send((card.clone(), report, backend.memory_source()));
                    queue::spawn_worker(worker_queue, move |job| {
                        match backend.run(&card, job, timeout) {
                            Ok(ran) => JobState::Done { result: ran.result },
                            Err(error) => {
                                backend.recover();
                                JobState::Failed {
                                    error: error.to_string(),
                                }
                            }
                        }
                    });
                })
                .expect("the OS can start the engine thread");
        }
        drop(tx);
        let (card, report, source) = rx.recv().unwrap_or_else(|_| {
            (
                cpu_card("the engine failed to start"),
                doctor::run(),
                Source::Host,
            )
        });
        let playgrounds = Playgrounds::new(
            source,
            limits.playground_per_student_bytes(),
            limits.playground_total_bytes(),
            PLAYGROUND_IDLE,
        );
        tracing::info!(backend = card.kind, device = %card.name, workers = limits.gpu_concurrency, "experiment engine ready");
        Self {
            queue,
            card: Arc::new(card),
            doctor: Arc::new(report),
            limits: Arc::new(limits),
            playgrounds: Arc::new(playgrounds),
        }
    }

    /// Queues a job for `owner` (a student id); returns its job id and position.
    pub fn submit(&self, owner: &str, job: Job) -> Result<(u64, usize), Refused> {
        self.queue.submit(owner, job)
    }

    /// Queue-wide figures (depth, running, outcomes).
    pub fn stats(&self) -> QueueStats {
        self.queue.stats()
    }

    /// Each student's use of the workers, busiest first.
    pub fn usage(&self) -> Vec<(String, OwnerUsage)> {
        self.queue.usage()
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

    /// A job's state.
    pub fn job(&self, id: u64) -> Option<JobState> {
        self.queue.state(id)
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

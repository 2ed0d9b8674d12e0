//! The experiment engine: everything that touches the GPU, and its CPU stand-in. All
//! `unsafe` in GPU Lab lives under this module, each block with a `// SAFETY:` line.
//!
//! - [`libs`]: run-time loading of libcuda / libnvrtc / libcublas without panicking.
//! - [`doctor`]: the layered check a newcomer reads to see which layer is missing.
//! - [`card`]: the device card (GPU from NVML and the driver API; CPU from `/proc`).
//! - [`cuda`]: the CUDA device handle (context, stream, NVML, NVRTC module cache).
//! - [`kernels`]: the `.cu` files in `kernels/`, embedded and compiled by NVRTC.
//! - [`queue`]: the bounded job queue and its single worker thread.
//! - [`stats`]: medians and spreads of repeated measurements.
//! - [`cpu`]: CPU building blocks (SGEMM, a calibrated busy loop).
//! - [`transfer`]: the host↔device bandwidth experiment, on CUDA or CPU.
//! - [`pool`], [`memory`]: the caching-allocator playground and memory snapshots.
//! - [`matmul`]: the CPU/GPU matmul crossover.
//! - [`precision`]: the FP32/TF32/FP16/BF16 GEMM shoot-out against FP64.
//! - [`timing`]: the timing trap with its two-lane timeline.
//! - [`breakit`]: lesson 9's two deliberate mistakes (batch left on the host; logging
//!   the loss every step).
//! - [`train`]: the training run (MLP, SGD/Adam, FP32/BF16): data, model, CPU reference.
//! - [`train_cuda`]: the same run on the GPU (cuBLAS + our kernels).
//!
//! The binary is one build for both backends: no cargo feature and no CUDA at build
//! time. [`Engine::start`] opens the GPU on the worker thread if it can, and falls back
//! to the CPU backend otherwise, with the reason in the device card's note.

#![allow(unsafe_code)]

pub mod breakit;
pub mod card;
pub mod cpu;
pub mod cuda;
pub mod doctor;
pub mod kernels;
pub mod libs;
pub mod matmul;
pub mod memory;
pub mod pool;
pub mod precision;
pub mod queue;
pub mod stats;
pub mod timing;
pub mod train;
pub mod train_cuda;
pub mod transfer;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Serialize;

use card::DeviceCard;
use cuda::CudaHandle;
use queue::{JobState, OwnerUsage, Queue, QueueStats, Refused};
use transfer::TransferParams;

/// What a student reads when a sweep passes the per-job time limit.
pub const PAST_LIMIT_TRY_SMALLER: &str =
    "the experiment ran past its time limit and was stopped; try a smaller size";
/// What a student reads when a training run passes the per-job time limit.
pub const PAST_LIMIT_TRY_FEWER_STEPS: &str =
    "the training run passed its time limit and was stopped; try fewer steps";

/// `Err(message)` once `deadline` has passed: every experiment checks this between
/// measurements so one job never holds the shared GPU past its limit.
pub fn check_deadline(deadline: Instant, message: &str) -> Result<(), String> {
    if Instant::now() > deadline {
        Err(message.to_string())
    } else {
        Ok(())
    }
}

/// Server-side caps that protect a shared GPU.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Jobs that may wait at once; more get 429.
    pub queue_capacity: usize,
    /// Experiments that may run at once (1 keeps every measurement alone on the GPU).
    pub concurrency: usize,
    /// Longest one experiment may run.
    pub job_timeout: Duration,
    /// Largest transfer-benchmark size in bytes.
    pub max_transfer_bytes: u64,
    /// Largest matrix side for the matmul crossover.
    pub max_matmul_size: usize,
    /// Most optimiser steps in one training run.
    pub max_train_steps: usize,
    /// Widest hidden layer in a training run.
    pub max_hidden: usize,
    /// Memory one student's allocator playground may reserve.
    pub playground_per_student_bytes: u64,
    /// Memory all playgrounds together may reserve.
    pub playground_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            queue_capacity: 16,
            concurrency: 1,
            job_timeout: Duration::from_secs(120),
            max_transfer_bytes: 1 << 30,
            max_matmul_size: 4096,
            max_train_steps: 2000,
            max_hidden: 1024,
            playground_per_student_bytes: 512 << 20,
            playground_total_bytes: 4 << 30,
        }
    }
}

/// An experiment request, already validated against [`Limits`].
#[derive(Debug, Clone)]
pub enum Experiment {
    /// Host↔device bandwidth sweep.
    Transfer(TransferParams),
    /// CPU/GPU matmul crossover.
    Matmul(matmul::MatmulParams),
    /// The timing trap and timeline.
    Timing,
    /// A small training run.
    Training(train::TrainParams),
    /// The same GEMM in four formats against FP64.
    Precision(precision::PrecisionParams),
    /// One of lesson 9's deliberate mistakes.
    BreakIt(breakit::BreakItParams),
}

impl Experiment {
    fn method(&self) -> String {
        match self {
            Self::Transfer(_) => format!(
                "{} warm-up copies, then {} samples per size of several back-to-back copies each; pinned copies timed with CUDA events, pageable copies with a host clock around a synchronised stream; median and min/max reported; GB = 1e9 bytes",
                transfer::WARMUPS,
                transfer::SAMPLES
            ),
            Self::Matmul(_) => format!(
                "square FP32 products; CPU: multithreaded SGEMM (matrixmultiply), host clock; GPU: cuBLAS SGEMM timed with CUDA events, with and without copying both inputs from pageable host memory first; 1 warm-up, median of {} repetitions",
                matmul::REPS
            ),
            Self::Training(p) => format!(
                "Linear({f}, {h}) → ReLU → Linear({h}, 3), cross-entropy, {opt}, {prec}; {dataset} synthetic tickets; step time per step, median over all steps (GPU: CUDA events between consecutive steps; CPU: host clock); samples/s = batch / median step time (robust to one slow step); logging cost from two extra {probe}-step runs reading the loss every step and every {n} steps",
                f = train::FEATURES,
                h = p.hidden,
                opt = p.optimizer,
                prec = p.precision,
                dataset = train::DATASET,
                probe = p.steps.min(20),
                n = p.log_every,
            ),
            Self::Precision(p) => format!(
                "{n} × {n} GEMM per format, 1 warm-up then {reps} repetitions, median; GPU: cuBLAS gemm_ex timed with CUDA events, reference cuBLAS DGEMM; CPU: matrixmultiply SGEMM (TF32/FP16/BF16 emulated by rounding) timed with a host clock, reference FP64 DGEMM; TFLOP/s = 2n³ / median time",
                n = p.size,
                reps = precision::REPS
            ),
            Self::BreakIt(p) if p.case == "batch-on-host" => "weights copied to the device, batch left in host memory; each buffer's location asked of the CUDA driver (cuPointerGetAttribute) before any forward pass".to_string(),
            Self::BreakIt(_) => format!(
                "the training run (batch {b}, hidden 128, Adam, FP32, {steps} steps) twice: reading the loss to the host every step, then every {sparse}; step time and samples/s as in the training run",
                b = breakit::BATCH,
                steps = breakit::LOG_STEPS,
                sparse = breakit::SPARSE_EVERY
            ),
            Self::Timing => format!(
                "{} kernels of about {} ms each queued back to back; host clock read after the launches return, host clock after synchronising, and device timestamps (CUDA events on a GPU; the worker thread's clock on the CPU backend)",
                timing::LAUNCHES,
                timing::TARGET_KERNEL_MS
            ),
        }
    }
}

/// Where a result came from, stamped on every result.
#[derive(Debug, Clone, Serialize)]
pub struct Provenance {
    /// `cuda` or `cpu`.
    pub backend: &'static str,
    /// Device (or CPU) name.
    pub device: String,
    /// NVIDIA driver version, GPU only.
    pub driver_version: Option<String>,
    /// CUDA version the driver supports, GPU only.
    pub cuda_version: Option<String>,
    /// PCIe generation and width as `gen4 x16`, GPU only.
    pub pcie: Option<String>,
    /// Maximum SM clock in MHz, GPU only.
    pub sm_clock_max_mhz: Option<u32>,
    /// Other processes on the GPU when the job started (NVML), GPU only.
    pub other_gpu_processes: Option<usize>,
    /// How it was measured.
    pub method: String,
    /// Wall time the job took, in seconds.
    pub seconds: f64,
}

enum Backend {
    Cuda(Box<CudaHandle>),
    Cpu,
}

/// The running engine: the worker thread, its queue, and what it runs on.
#[derive(Clone)]
pub struct Engine {
    queue: Arc<Queue<Experiment>>,
    /// The device the worker opened.
    pub card: Arc<DeviceCard>,
    /// The doctor report taken at start-up.
    pub doctor: Arc<doctor::Report>,
    /// The caps in force.
    pub limits: Arc<Limits>,
    /// Every student's allocator playground.
    pub playgrounds: Arc<memory::Playgrounds>,
}

/// Playgrounds unused for this long are dropped and their memory released.
pub const PLAYGROUND_IDLE: Duration = Duration::from_secs(30 * 60);

impl Engine {
    /// Starts the workers (`limits.concurrency` of them, each with its own backend),
    /// which open the GPU if they can (or use the CPU).
    pub fn start(limits: Limits) -> Self {
        let queue: Arc<Queue<Experiment>> = Queue::new(limits.queue_capacity);
        let (tx, rx) = mpsc::channel();
        for worker in 0..limits.concurrency.max(1) {
            let timeout = limits.job_timeout;
            let worker_queue = Arc::clone(&queue);
            let tx = tx.clone();
            std::thread::Builder::new()
                .name(format!("gpulab-engine-{worker}"))
                .spawn(move || {
                    let report = doctor::run();
                    let (mut backend, card, source) = open_backend();
                    let _ = tx.send((card.clone(), report, source));
                    queue::spawn_worker(worker_queue, move |job| {
                        let state = run_job(&mut backend, &card, &job, timeout);
                        if matches!(state, JobState::Failed { .. }) {
                            recover(&mut backend);
                        }
                        state
                    });
                })
                .expect("the OS can start the engine thread");
        }
        drop(tx);
        let (card, report, source) = rx.recv().unwrap_or_else(|_| {
            (
                card::cpu_card("the engine failed to start"),
                doctor::run(),
                pool::Source::Host,
            )
        });
        let playgrounds = memory::Playgrounds::new(
            source,
            limits.playground_per_student_bytes,
            limits.playground_total_bytes,
            PLAYGROUND_IDLE,
        );
        tracing::info!(backend = card.kind, device = %card.name, workers = limits.concurrency, "experiment engine ready");
        Self {
            queue,
            card: Arc::new(card),
            doctor: Arc::new(report),
            limits: Arc::new(limits),
            playgrounds: Arc::new(playgrounds),
        }
    }

    /// Queues an experiment for `owner` (a student id); returns its job id and position.
    pub fn submit(&self, owner: &str, experiment: Experiment) -> Result<(u64, usize), Refused> {
        self.queue.submit(owner, experiment)
    }

    /// Queue-wide figures (depth, running, outcomes).
    pub fn stats(&self) -> QueueStats {
        self.queue.stats()
    }

    /// Each student's use of the worker, busiest first.
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

/// Opens the GPU, or falls back to the CPU with the reason in the card.
fn open_backend() -> (Backend, DeviceCard, pool::Source) {
    match CudaHandle::open() {
        Ok(handle) => {
            let card = handle.card.clone();
            let source = pool::Source::Device(Arc::clone(&handle.ctx));
            (Backend::Cuda(Box::new(handle)), card, source)
        }
        Err(reason) => (Backend::Cpu, card::cpu_card(&reason), pool::Source::Host),
    }
}

/// After a failed job: if the CUDA context no longer works (a sticky error such as an
/// illegal address poisons it for good), reset the device's primary context and open a
/// fresh handle, so the next student's experiment runs on a working GPU.
fn recover(backend: &mut Backend) {
    let Backend::Cuda(gpu) = backend else { return };
    if gpu.healthy() {
        return;
    }
    tracing::warn!("the CUDA context failed a health check after an error; recreating it");
    // Drop the old handle (its modules, cuBLAS handle and context reference) first.
    *backend = Backend::Cpu;
    match CudaHandle::reset_and_open() {
        Ok(fresh) => {
            *backend = Backend::Cuda(Box::new(fresh));
            tracing::info!("CUDA context recreated");
        }
        Err(reason) => {
            tracing::error!(%reason, "could not recreate the CUDA context; later experiments run on the CPU");
        }
    }
}

fn run_job(
    backend: &mut Backend,
    card: &DeviceCard,
    job: &Experiment,
    timeout: Duration,
) -> JobState {
    let started = Instant::now();
    let deadline = started + timeout;
    fn json<T: Serialize>(r: Result<T, String>) -> Result<serde_json::Value, String> {
        r.and_then(|v| serde_json::to_value(v).map_err(|e| e.to_string()))
    }
    let (mut gpu, other) = match backend {
        Backend::Cuda(handle) => {
            let other = handle.other_processes();
            (Some(&mut **handle), other)
        }
        Backend::Cpu => (None, None),
    };
    let outcome = match job {
        Experiment::Transfer(p) => json(match gpu {
            Some(handle) => transfer::run_cuda(handle, p, deadline),
            None => transfer::run_cpu(p, deadline),
        }),
        Experiment::Matmul(p) => json(matmul::run(gpu, p, deadline)),
        Experiment::Timing => json(match gpu {
            Some(handle) => timing::run_cuda(handle),
            None => timing::run_cpu(),
        }),
        Experiment::Precision(p) => json(precision::run(gpu, p, deadline)),
        Experiment::BreakIt(p) if p.case == "batch-on-host" => json(breakit::run_placement(gpu)),
        Experiment::BreakIt(_) => json(breakit::run_logging(
            |p| train_cuda::run(gpu.as_deref_mut(), p, deadline),
            deadline,
        )),
        Experiment::Training(p) => json(train_cuda::run(gpu, p, deadline)),
    };
    match outcome {
        Ok(mut result) => {
            let provenance = Provenance {
                backend: card.kind,
                device: card.name.clone(),
                driver_version: card.driver_version.clone(),
                cuda_version: card.cuda_driver_version.clone(),
                pcie: card
                    .pcie
                    .as_ref()
                    .map(|p| format!("gen{} x{}", p.generation, p.width)),
                sm_clock_max_mhz: card.sm_clock_max_mhz,
                other_gpu_processes: other,
                method: job.method(),
                seconds: started.elapsed().as_secs_f64(),
            };
            if let Some(object) = result.as_object_mut() {
                object.insert(
                    "provenance".into(),
                    serde_json::to_value(provenance).unwrap_or_default(),
                );
            }
            JobState::Done { result }
        }
        Err(error) => JobState::Failed { error },
    }
}

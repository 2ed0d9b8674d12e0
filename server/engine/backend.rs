//! What one engine worker computes on: the GPU when it opens, else the CPU (with the
//! reason on the device card). [`Backend::run`] runs one validated job against a
//! deadline and returns its typed [`Outcome`] and its table; after a failure
//! [`super::worker`] checks the CUDA context ([`Backend::healthy`]) and, with every
//! other worker paused, recreates it ([`Backend::reset`]); the others then
//! [`Backend::reopen`]. `gpulab bench` uses `open` and `run` outside the queue.

use std::time::{Duration, Instant};

use super::first_contact::{self, FirstContact};
use super::outcome::Outcome;
use super::provenance::Provenance;
use crate::experiments::{ExperimentError, Job};
use crate::gpu::card::cpu_card;
use crate::gpu::{DeviceCard, DeviceKind, Gpu};
use crate::measure::Deadline;
use crate::playground::pool::Source;

/// The GPU, or the CPU stand-in.
pub enum Backend {
    /// An open GPU.
    Cuda(Box<Gpu>),
    /// No usable GPU.
    Cpu,
    /// The server runs on the GPU, but this worker's handle is gone (a reset failed):
    /// its jobs fail with this reason rather than run on the CPU under a GPU card.
    Lost(String),
}

/// A finished job.
pub struct Ran {
    /// How it ended, typed (the API's JSON of the job).
    pub outcome: Outcome,
    /// The result as `gpulab bench` prints it.
    pub table: String,
}

impl Backend {
    /// Opens the GPU and runs its start-up self-test ([`first_contact`]); falls back
    /// to the CPU, with the reason on the card, when either fails. The CPU backend
    /// runs its own quick checks. The report says what the serving backend passed.
    pub fn open() -> (Self, DeviceCard, FirstContact) {
        let gpu_failure = match Gpu::open() {
            Ok(gpu) => {
                let card = gpu.card().clone();
                match first_contact::admit(gpu, first_contact::gpu_checks) {
                    (Some(gpu), report) => return (Self::Cuda(Box::new(gpu)), card, report),
                    (None, report) => {
                        let reason = first_contact::reason(&report);
                        tracing::error!(%reason, "not using the GPU");
                        Some((reason, report.checks))
                    }
                }
            }
            Err(reason) => {
                tracing::info!(%reason, "no usable GPU");
                Some((reason.to_string(), Vec::new()))
            }
        };
        let (reason, rejected_gpu) = gpu_failure.unwrap_or_default();
        let mut report = FirstContact::new(DeviceKind::Cpu, first_contact::cpu_checks());
        report.rejected_gpu = rejected_gpu;
        if !report.ok() {
            tracing::error!(failed = ?report.failed(), "the CPU backend failed its start-up self-test");
        }
        (Self::Cpu, cpu_card(&reason), report)
    }

    /// Another worker's backend, like the first worker's `card`: the CPU when that is
    /// the CPU; a fresh GPU handle that passes the self-test when it is a GPU; `None`
    /// when this handle fails (the worker then does not serve).
    pub fn open_like(card: &DeviceCard) -> Option<Self> {
        if !card.kind.is_cuda() {
            return Some(Self::Cpu);
        }
        let gpu = Gpu::open().ok()?;
        first_contact::admit(gpu, first_contact::gpu_checks)
            .0
            .map(|gpu| Self::Cuda(Box::new(gpu)))
    }

    /// The GPU, when this backend has one.
    pub fn gpu(&mut self) -> Option<&mut Gpu> {
        match self {
            Self::Cuda(gpu) => Some(gpu),
            Self::Cpu | Self::Lost(_) => None,
        }
    }

    /// Where the allocator playground's memory comes from.
    pub fn memory_source(&self) -> Source {
        match self {
            Self::Cuda(gpu) => Source::Device(gpu.memory()),
            Self::Cpu | Self::Lost(_) => Source::Host,
        }
    }

    /// Runs `job` to completion or until `timeout`.
    pub fn run(
        &mut self,
        card: &DeviceCard,
        job: Job,
        timeout: Duration,
    ) -> Result<Ran, ExperimentError> {
        let started = Instant::now();
        let deadline = Deadline::after(timeout);
        let method = job.method.clone();
        let prediction = job.prediction;
        let on_gpu = matches!(self, Self::Cuda(_));
        let other = match self {
            Self::Cuda(gpu) => gpu.other_processes(),
            Self::Cpu => None,
            Self::Lost(reason) => return Err(ExperimentError::Failed(reason.clone())),
        };
        let outcome = job.run(self.gpu(), &deadline);
        if let Self::Cuda(gpu) = self {
            // Free memory goes back after every job, failed ones too; a trim that fails
            // costs only an inflated memory snapshot, so it is logged, not raised.
            if let Err(e) = gpu.release_free_memory() {
                tracing::warn!("could not return the job's freed memory to the driver: {e}");
            }
        }
        let finished = outcome?;
        let provenance = Provenance::new(card, other, method, started.elapsed().as_secs_f64());
        let outcome = Outcome::new(
            finished.json(),
            provenance,
            finished.measured(on_gpu),
            prediction,
            finished.lab_attempt(),
        );
        Ok(Ran {
            outcome,
            table: finished.table(),
        })
    }

    /// Whether the GPU's context still works (always true on the CPU).
    pub fn healthy(&self) -> bool {
        match self {
            Self::Cuda(gpu) => gpu.healthy(),
            Self::Cpu | Self::Lost(_) => true,
        }
    }

    /// After another worker reset the context: drops this handle (its modules and
    /// cuBLAS handle died with the old context) and opens a fresh one. A GPU that will
    /// not reopen leaves this worker [`Backend::Lost`], never silently on the CPU.
    pub fn reopen(&mut self) {
        if matches!(self, Self::Cpu) {
            return;
        }
        *self = Self::Lost("the GPU is being reopened".into());
        *self = match Gpu::open() {
            Ok(gpu) => Self::Cuda(Box::new(gpu)),
            Err(e) => Self::Lost(format!(
                "the GPU could not be reopened after a context reset: {e}"
            )),
        };
    }

    /// Destroys the device's primary context (a sticky error such as an illegal address
    /// poisons it for good) and opens a fresh handle. Only [`super::worker`] calls this,
    /// while no other worker runs a job.
    pub fn reset(&mut self) {
        if matches!(self, Self::Cpu) {
            return;
        }
        tracing::warn!("the CUDA context failed a health check after an error; recreating it");
        // Drop the old handle (its modules, cuBLAS handle and context reference) first.
        *self = Self::Lost("the GPU is being reset".into());
        *self = match Gpu::reset_and_open() {
            Ok(fresh) => {
                tracing::info!("CUDA context recreated");
                Self::Cuda(Box::new(fresh))
            }
            Err(reason) => {
                tracing::error!(%reason, "could not recreate the CUDA context");
                Self::Lost(format!(
                    "the GPU could not be recreated after an error: {reason}"
                ))
            }
        };
    }
}

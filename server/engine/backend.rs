//! What one engine worker computes on: the GPU when it opens, else the CPU (with the
//! reason on the device card). [`Backend::run`] runs one validated job against a
//! deadline and returns its JSON (with provenance) and its table; after a failure
//! [`Backend::recover`] checks the CUDA context and recreates it when a sticky error
//! has poisoned it. `gpulab bench` uses the same two calls outside the queue.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::provenance::Provenance;
use crate::experiments::{ExperimentError, Job};
use crate::gpu::card::cpu_card;
use crate::gpu::{DeviceCard, Gpu};
use crate::measure::Deadline;
use crate::playground::pool::Source;

/// The GPU, or the CPU stand-in.
pub enum Backend {
    /// An open GPU.
    Cuda(Box<Gpu>),
    /// No usable GPU.
    Cpu,
}

/// A finished job.
pub struct Ran {
    /// The result with its provenance, as the API returns it.
    pub result: Value,
    /// The result as `gpulab bench` prints it.
    pub table: String,
    /// Where it came from.
    pub provenance: Provenance,
}

impl Backend {
    /// Opens the GPU, or falls back to the CPU with the reason in the card.
    pub fn open() -> (Self, DeviceCard) {
        match Gpu::open() {
            Ok(gpu) => {
                let card = gpu.card().clone();
                (Self::Cuda(Box::new(gpu)), card)
            }
            Err(reason) => (Self::Cpu, cpu_card(&reason.to_string())),
        }
    }

    /// The GPU, when this backend has one.
    pub fn gpu(&mut self) -> Option<&mut Gpu> {
        match self {
            Self::Cuda(gpu) => Some(gpu),
            Self::Cpu => None,
        }
    }

    /// Where the allocator playground's memory comes from.
    pub fn memory_source(&self) -> Source {
        match self {
            Self::Cuda(gpu) => Source::Device(gpu.memory()),
            Self::Cpu => Source::Host,
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
        let other = match self {
            Self::Cuda(gpu) => gpu.other_processes(),
            Self::Cpu => None,
        };
        let finished = job.run(self.gpu(), &deadline)?;
        let provenance = Provenance::new(card, other, method, started.elapsed().as_secs_f64());
        Ok(Ran {
            result: provenance.attach(finished.json()),
            table: finished.table(),
            provenance,
        })
    }

    /// After a failed job: if the CUDA context no longer works (a sticky error such as an
    /// illegal address poisons it for good), reset the device's primary context and open
    /// a fresh handle, so the next student's experiment runs on a working GPU.
    pub fn recover(&mut self) {
        let Self::Cuda(gpu) = self else { return };
        if gpu.healthy() {
            return;
        }
        tracing::warn!("the CUDA context failed a health check after an error; recreating it");
        // Drop the old handle (its modules, cuBLAS handle and context reference) first.
        *self = Self::Cpu;
        match Gpu::reset_and_open() {
            Ok(fresh) => {
                *self = Self::Cuda(Box::new(fresh));
                tracing::info!("CUDA context recreated");
            }
            Err(reason) => {
                tracing::error!(%reason, "could not recreate the CUDA context; later experiments run on the CPU");
            }
        }
    }
}

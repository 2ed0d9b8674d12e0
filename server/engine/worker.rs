//! One engine worker: runs jobs on its own [`Backend`], and recovers the GPU when a job
//! leaves it broken — also when the job panicked. With `--gpu-concurrency > 1` several
//! workers share the device's primary context, so resetting it would pull the GPU from
//! under the others: every job runs holding a read lock on [`SharedContext`], a reset
//! takes the write lock (so it waits until no job runs) and bumps the context's
//! generation, and each other worker reopens its handle before its next job.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::backend::{Backend, Ran};
use crate::experiments::Job;
use crate::gpu::DeviceCard;

/// The primary context's generation, shared by every worker; bumped by each reset.
#[derive(Default)]
pub struct SharedContext {
    generation: RwLock<u64>,
}

/// A worker's backend and what it needs to run and recover.
pub struct Worker {
    backend: Backend,
    card: DeviceCard,
    timeout: Duration,
    shared: Arc<SharedContext>,
    generation: u64,
}

impl Worker {
    /// A worker running jobs on `backend`, described by `card`.
    pub fn new(
        backend: Backend,
        card: DeviceCard,
        timeout: Duration,
        shared: Arc<SharedContext>,
    ) -> Self {
        let generation = *shared.generation.read().unwrap_or_else(|e| e.into_inner());
        Self {
            backend,
            card,
            timeout,
            shared,
            generation,
        }
    }

    /// Runs one job (its result, or the error a student reads); after a failure or a
    /// panic, recovers the GPU for the next one.
    pub fn run(&mut self, job: Job) -> Result<Ran, String> {
        let outcome = {
            let current = self
                .shared
                .generation
                .read()
                .unwrap_or_else(|e| e.into_inner());
            if *current != self.generation {
                self.backend.reopen();
                self.generation = *current;
            }
            let (backend, card, timeout) = (&mut self.backend, &self.card, self.timeout);
            catch_unwind(AssertUnwindSafe(|| backend.run(card, job, timeout)))
        };
        match outcome {
            Ok(Ok(ran)) => Ok(ran),
            Ok(Err(error)) => {
                self.recover();
                Err(error.to_string())
            }
            Err(panic) => {
                tracing::error!(panic = %panic_message(&*panic), "an experiment panicked");
                self.recover();
                Err(format!(
                    "the experiment crashed: {}",
                    panic_message(&*panic)
                ))
            }
        }
    }

    /// Resets the context if this worker's job broke it, unless another worker already
    /// did (then this one only reopens its handle).
    fn recover(&mut self) {
        if catch_unwind(AssertUnwindSafe(|| self.backend.healthy())).unwrap_or(false) {
            return;
        }
        let mut generation = self
            .shared
            .generation
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if *generation != self.generation {
            self.backend.reopen();
        } else {
            self.backend.reset();
            *generation += 1;
        }
        self.generation = *generation;
    }
}

/// The text of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
        .unwrap_or_else(|| "no message".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::Limits;
    use crate::experiments::REGISTRY;

    fn worker(backend: Backend) -> Worker {
        let card = crate::gpu::card::cpu_card("test");
        Worker::new(backend, card, Duration::from_secs(60), Arc::default())
    }

    fn real_job() -> Job {
        let timing = REGISTRY.iter().find(|e| e.name() == "timing").unwrap();
        timing.prepare(None, &Limits::default()).unwrap()
    }

    #[test]
    fn a_worker_survives_a_panicking_job_and_runs_the_next() {
        let mut worker = worker(Backend::Cpu);
        let state = worker.run(Job::from_fn(|_, _| panic!("kernel argument mix-up")));
        assert!(
            matches!(&state, Err(error) if error.contains("kernel argument mix-up")),
            "{:?}",
            state.err()
        );
        let state = worker.run(real_job());
        assert!(state.is_ok(), "{:?}", state.err());
    }

    #[test]
    fn a_lost_gpu_fails_jobs_with_its_reason_instead_of_running_them_on_the_cpu() {
        let mut worker = worker(Backend::Lost("reset failed: no device".into()));
        let state = worker.run(real_job());
        assert!(
            matches!(&state, Err(error) if error.contains("reset failed")),
            "{:?}",
            state.as_ref().err()
        );
    }

    #[test]
    fn a_worker_behind_the_shared_generation_reopens_before_its_next_job() {
        let shared = Arc::new(SharedContext::default());
        let card = crate::gpu::card::cpu_card("test");
        let mut worker = Worker::new(
            Backend::Cpu,
            card,
            Duration::from_secs(60),
            Arc::clone(&shared),
        );
        *shared.generation.write().unwrap() += 1;
        assert!(worker.run(real_job()).is_ok());
        assert_eq!(worker.generation, 1, "the worker caught up with the reset");
    }
}

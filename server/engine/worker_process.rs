//! `gpulab worker`: one process per GPU serving a class's queue in PostgreSQL. It opens
//! its device and self-tests exactly as `serve` does, measures its ceilings once
//! (`experiments::ceilings`, as `serve`'s first worker does) before it claims a job,
//! takes a name no live worker uses, stores the ceilings on its row of `workers` (web
//! nodes, which measure nothing, show them: [`crate::db::worker_ceilings`]), serves the allocator playgrounds it owns on a second thread
//! ([`crate::playground::remote`]), and runs the same [`worker_loop`] as `serve`'s
//! threads until told to stop.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::backend::Backend;
use super::worker::Worker;
use super::worker_loop::{self, Activity, WorkerSettings};
use crate::db::{Db, DbError, job_claims, worker_ceilings};
use crate::playground::{Playgrounds, remote};

/// Waits (up to a few seconds, for a restarted worker's old row to go quiet) until no
/// live worker uses `name`: two workers under one name would renew each other's leases.
fn claim_name(db: &Db, name: &str) -> Result<(), DbError> {
    let deadline = Instant::now() + Duration::from_secs(6);
    while db.run_blocking(|tx| job_claims::name_taken(tx, name))? {
        if Instant::now() >= deadline {
            return Err(DbError::Task(format!(
                "another worker named `{name}` is serving this class queue; give each worker its own --name (GPULAB_WORKER_NAME)"
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Ok(())
}

/// Serves the class queue until `stop` is set (then finishes the job in hand).
pub fn serve(db: &Db, settings: &WorkerSettings, stop: &Arc<AtomicBool>) -> Result<(), DbError> {
    let (mut backend, card, contact) = Backend::open();
    if !contact.ok() {
        tracing::warn!(
            "the GPU failed its start-up self-test; this worker runs experiments on the CPU"
        );
    }
    // Issue 27 §3: this device's ceilings, once, before the first job.
    let ceilings = crate::experiments::ceilings::calibrate(backend.gpu());
    let playgrounds = Arc::new(Playgrounds::new(
        backend.memory_source(),
        super::playground_caps(&settings.limits),
    ));
    let mut worker = Worker::new(
        backend,
        card.clone(),
        settings.limits.job_timeout(),
        Arc::default(),
    );
    claim_name(db, &settings.name)?;
    let (card_json, ceilings_json) = (
        serde_json::to_string(&card).unwrap_or_default(),
        serde_json::to_string(&ceilings).unwrap_or_default(),
    );
    db.run_blocking(|tx| {
        worker_ceilings::store(
            tx,
            &settings.name,
            card.kind.name(),
            &card_json,
            &ceilings_json,
        )
    })?;
    tracing::info!(
        worker = settings.name,
        took_ms = ceilings.took_ms,
        figures = ceilings.figures.len(),
        "ceilings measured and stored"
    );
    tracing::info!(worker = settings.name, backend = %card.kind, device = %card.name, "worker serving the class queue");
    let playground_thread = {
        let (db, name, stop) = (db.clone(), settings.name.clone(), Arc::clone(stop));
        std::thread::Builder::new()
            .name("gpulab-playgrounds".into())
            .spawn(move || remote::serve(&db, &name, &playgrounds, &stop))
            .expect("the OS can start a thread")
    };
    worker_loop::serve_jobs(db, settings, &card, &mut worker, &Activity::default(), stop);
    let _ = playground_thread.join();
    Ok(())
}

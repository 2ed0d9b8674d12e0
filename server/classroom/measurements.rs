//! This server's measurements, for hardware-graded quiz questions and the script
//! doctor, read from the database ([`crate::db::measurements`], written by the worker
//! with the run's result), in both modes, so a web node sees what any worker measured. Grading a question takes a
//! measurement from the last [`FRESH`] interval, else the latest one of any age (and
//! refreshes it in the background), else runs the experiment once (one run at a time)
//! and waits a few seconds for it. A question still without a measurement is not
//! counted in that attempt: a quiz submission never fails because the GPU is busy.

use std::time::{Duration, Instant};

use std::sync::Arc;

use crate::config::Limits;
use crate::course::quiz::MeasuredKey;
use crate::db::{self, Db, DbError};
use crate::engine::Engine;

/// How old a measurement may be and still grade an answer without a new run.
pub const FRESH: Duration = Duration::from_secs(30 * 60);

/// The owner a grading run is queued under (not a student).
pub const GRADER: &str = "quiz-grader";

/// The measurements in the database, the engine that takes new ones, and the one
/// grading run at a time.
pub struct Measurements {
    db: Db,
    engine: Engine,
    measuring: tokio::sync::Mutex<()>,
}

impl Measurements {
    /// Reads measurements from `db`; runs the experiments that take them on `engine`.
    pub fn new(db: Db, engine: Engine) -> Self {
        Self {
            db,
            engine,
            measuring: tokio::sync::Mutex::new(()),
        }
    }

    /// The latest value of `quantity` measured with `params` (compact JSON), no older
    /// than `max_age` (any age with `None`).
    pub async fn latest(
        &self,
        quantity: &str,
        params: &str,
        max_age: Option<Duration>,
    ) -> Option<f64> {
        let (quantity, params) = (quantity.to_string(), params.to_string());
        let max_age = max_age.map(|age| age.as_secs_f64());
        self.db
            .run(move |tx| db::measurements::latest(tx, &quantity, &params, max_age))
            .await
            .ok()
            .flatten()
    }

    /// The newest value of `quantity` measured with any parameters.
    pub async fn newest(&self, quantity: &str) -> Option<f64> {
        let quantity = quantity.to_string();
        self.db
            .run(move |tx| db::measurements::newest(tx, &quantity))
            .await
            .ok()
            .flatten()
    }

    /// Records `value` of `quantity` measured with `params` (compact JSON) now, as a
    /// run would (seeding a server's measurements; blocks on the database).
    pub fn record(&self, quantity: &str, params: &str, value: f64) -> Result<(), DbError> {
        self.db
            .run_blocking(|tx| db::measurements::record(tx, quantity, params, value))
    }

    /// Records `value` for the question key `key` as measured now, as a run of it would.
    pub fn record_for(
        &self,
        key: &MeasuredKey,
        limits: &Limits,
        value: f64,
    ) -> Result<(), DbError> {
        match canonical(key, limits) {
            Some(params) => self.record(&key.quantity, &params, value),
            None => Ok(()),
        }
    }
}

/// The key's parameters as a run validates them (compact JSON), under `limits`.
pub fn canonical(key: &MeasuredKey, limits: &Limits) -> Option<String> {
    let experiment = crate::experiments::find(&key.experiment)?;
    Some(
        experiment
            .prepare(Some(&key.params), limits)
            .ok()?
            .params
            .to_string(),
    )
}

/// How long a quiz submission waits for a first measurement before grading without it.
pub const FIRST_WAIT: Duration = Duration::from_secs(5);

/// Runs the experiment behind `key` once (one run at a time) unless a fresh value
/// appeared meanwhile; the worker records the value with the run.
async fn refresh(measurements: Arc<Measurements>, key: MeasuredKey) {
    let Some(experiment) = crate::experiments::find(&key.experiment) else {
        return;
    };
    let engine = &measurements.engine;
    let Ok(job) = experiment.prepare(Some(&key.params), &engine.limits) else {
        return;
    };
    let params = job.params.to_string();
    let _measuring = measurements.measuring.lock().await;
    if measurements
        .latest(&key.quantity, &params, Some(FRESH))
        .await
        .is_some()
    {
        return;
    }
    let Ok((id, _)) = engine.submit(GRADER, None, job).await else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(engine.limits.job_timeout_secs + 10);
    let _ = engine.finished(id, Some(deadline)).await;
}

impl Measurements {
    /// This class's value for `key`: a fresh one; else the latest of any age (and a new
    /// run in the background); else a first run, waited for at most [`FIRST_WAIT`].
    /// `None` when there is still none: the question is then not counted in this
    /// attempt.
    pub async fn value_for(self: &Arc<Self>, key: &MeasuredKey) -> Option<f64> {
        let params = canonical(key, &self.engine.limits)?;
        let latest = |age| self.latest(&key.quantity, &params, age);
        if let Some(value) = latest(Some(FRESH)).await {
            return Some(value);
        }
        if let Some(stale) = latest(None).await {
            tokio::spawn(refresh(Arc::clone(self), key.clone()));
            return Some(stale);
        }
        let _ = tokio::time::timeout(FIRST_WAIT, refresh(Arc::clone(self), key.clone())).await;
        latest(None).await
    }
}

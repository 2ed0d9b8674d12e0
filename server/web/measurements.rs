//! This server's recent measurements, for hardware-graded quiz questions: every
//! experiment run that measured its prediction quantity is remembered here (by quantity
//! and validated parameters) by the worker's finish listener. Grading a question takes
//! a measurement from the last [`FRESH`] interval, else the latest one of any age (and
//! refreshes it in the background), else runs the experiment once (one run at a time)
//! and waits a few seconds for it. A question still without a measurement is not
//! counted in that attempt: a quiz submission never fails because the GPU is busy.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::Limits;
use crate::course::quiz::MeasuredKey;
use crate::engine::queue::JobState;
use crate::web::state::AppState;

/// How old a measurement may be and still grade an answer without a new run.
pub const FRESH: Duration = Duration::from_secs(30 * 60);

/// The owner a grading run is queued under (not a student).
pub const GRADER: &str = "quiz-grader";

/// Recent measurements by (quantity, parameters as compact JSON).
#[derive(Default)]
pub struct Measurements {
    recent: Mutex<HashMap<(String, String), (f64, Instant)>>,
    measuring: tokio::sync::Mutex<()>,
}

impl Measurements {
    /// Remembers `value` of `quantity` measured with `params` (compact JSON) now.
    pub fn record(&self, quantity: &str, params: &str, value: f64) {
        if let Ok(mut recent) = self.recent.lock() {
            recent.insert(
                (quantity.to_string(), params.to_string()),
                (value, Instant::now()),
            );
        }
    }

    /// The latest value no older than `max_age` (any age with `None`).
    pub fn latest(&self, quantity: &str, params: &str, max_age: Option<Duration>) -> Option<f64> {
        let recent = self.recent.lock().ok()?;
        let (value, at) = recent.get(&(quantity.to_string(), params.to_string()))?;
        max_age
            .is_none_or(|age| at.elapsed() <= age)
            .then_some(*value)
    }

    /// The newest value of `quantity` measured with any parameters, and when.
    pub fn newest(&self, quantity: &str) -> Option<(f64, Instant)> {
        let recent = self.recent.lock().ok()?;
        recent
            .iter()
            .filter(|((q, _), _)| q == quantity)
            .map(|(_, (value, at))| (*value, *at))
            .max_by_key(|(_, at)| *at)
    }

    /// Remembers `value` for the question key `key` (what a run would record).
    pub fn record_for(&self, key: &MeasuredKey, limits: &Limits, value: f64) {
        if let Some(params) = canonical(key, limits) {
            self.record(&key.quantity, &params, value);
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
/// appeared meanwhile; the finish listener remembers the value.
async fn refresh(state: AppState, key: MeasuredKey) {
    let Some(experiment) = crate::experiments::find(&key.experiment) else {
        return;
    };
    let Ok(job) = experiment.prepare(Some(&key.params), &state.engine.limits) else {
        return;
    };
    let params = job.params.to_string();
    let _measuring = state.measurements.measuring.lock().await;
    if state
        .measurements
        .latest(&key.quantity, &params, Some(FRESH))
        .is_some()
    {
        return;
    }
    let Ok((id, _)) = state.engine.submit(GRADER, None, job).await else {
        return;
    };
    let deadline = Instant::now() + Duration::from_secs(state.engine.limits.job_timeout_secs + 10);
    // This process's finish listener remembers the value; a web node on the shared
    // queue (whose workers run elsewhere) reads it off the result.
    if let Some(JobState::Done { result }) = state.engine.finished(id, Some(deadline)).await
        && let Some(measured) = result.get("measured")
        && let Some(value) = measured.get("value").and_then(serde_json::Value::as_f64)
    {
        state.measurements.record(&key.quantity, &params, value);
    }
}

/// This server's value for `key`: a fresh one; else the latest of any age (and a new
/// run in the background); else a first run, waited for at most [`FIRST_WAIT`]. `None`
/// when there is still none: the question is then not counted in this attempt.
pub async fn value_for(state: &AppState, key: &MeasuredKey) -> Option<f64> {
    let params = canonical(key, &state.engine.limits)?;
    let latest = |age| state.measurements.latest(&key.quantity, &params, age);
    if let Some(value) = latest(Some(FRESH)) {
        return Some(value);
    }
    if let Some(stale) = latest(None) {
        tokio::spawn(refresh(state.clone(), key.clone()));
        return Some(stale);
    }
    let _ = tokio::time::timeout(FIRST_WAIT, refresh(state.clone(), key.clone())).await;
    latest(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_takes_the_latest_value_of_a_quantity_over_any_parameters() {
        let measurements = Measurements::default();
        assert!(measurements.newest("timing.underestimate_factor").is_none());
        measurements.record("timing.underestimate_factor", "{\"n\":1}", 3.0);
        std::thread::sleep(Duration::from_millis(2));
        measurements.record("timing.underestimate_factor", "{\"n\":2}", 7.5);
        measurements.record("streams.best_speedup", "{}", 1.9);
        let (value, _) = measurements.newest("timing.underestimate_factor").unwrap();
        assert_eq!(value, 7.5);
    }
}

//! The history of finished experiments, kept in the database so the instructor's view
//! survives a restart: who ran what, with which parameters, on which device, for how
//! long, and whether it worked. A row is written by the experiment worker before the
//! job is marked finished, so a student who sees a result can rely on its record.

use serde::Serialize;

use super::sql::{ToValue, Value};
use super::{DbError, Tx};

/// Longest parameter summary or error message stored, in characters.
pub const MAX_TEXT_CHARS: usize = 300;

/// One finished experiment, as the worker reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentRun {
    /// The student who asked for it.
    pub student_id: String,
    /// The experiment's name (`transfer`, `matmul`, …).
    pub experiment: String,
    /// The validated parameters, as compact JSON.
    pub params: String,
    /// `cuda` or `cpu`.
    pub backend: String,
    /// The device's name.
    pub device: String,
    /// Time on the worker, in milliseconds.
    pub duration_ms: u64,
    /// Whether it finished with a result.
    pub ok: bool,
    /// What went wrong, when it did not.
    pub error: Option<String>,
}

/// A stored run, with when it finished (UTC, ISO 8601).
#[derive(Debug, Clone, Serialize)]
pub struct StoredRun {
    /// The run.
    #[serde(flatten)]
    pub run: ExperimentRun,
    /// When it finished.
    pub finished_at: String,
}

fn clip(text: &str) -> String {
    text.chars().take(MAX_TEXT_CHARS).collect()
}

/// The columns [`record`] fills, and the values it binds (texts clipped to
/// [`MAX_TEXT_CHARS`]), for a statement that also does something else (the class
/// queue's completion inserts the run in the statement that stores the result).
pub const COLUMNS: &str = "student_id, experiment, params, backend, device, duration_ms, ok, error";

/// The values of `run` for [`COLUMNS`], in order.
pub fn values(run: &ExperimentRun) -> Vec<Value> {
    vec![
        Value::Text(run.student_id.clone()),
        Value::Text(run.experiment.clone()),
        Value::Text(clip(&run.params)),
        Value::Text(run.backend.clone()),
        Value::Text(run.device.clone()),
        Value::Int(i64::try_from(run.duration_ms).unwrap_or(i64::MAX)),
        Value::Int(i64::from(run.ok)),
        run.error
            .as_deref()
            .map_or(Value::Null, |e| Value::Text(clip(e))),
    ]
}

/// Stores `run` (its texts clipped to [`MAX_TEXT_CHARS`]).
pub fn record(tx: &mut Tx, run: &ExperimentRun) -> Result<(), DbError> {
    let values = values(run);
    let params: Vec<&dyn ToValue> = values.iter().map(|v| v as &dyn ToValue).collect();
    tx.execute(
        &format!("INSERT INTO experiment_runs ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        &params,
    )?;
    Ok(())
}

/// The `limit` most recent runs, newest first.
pub fn recent(tx: &mut Tx, limit: usize) -> Result<Vec<StoredRun>, DbError> {
    tx.query(
        "SELECT student_id, experiment, params, backend, device, duration_ms, ok, error, finished_at
         FROM experiment_runs ORDER BY id DESC LIMIT ?1",
        crate::params![i64::try_from(limit).unwrap_or(i64::MAX)],
    )?
    .iter()
    .map(|r| {
        Ok(StoredRun {
            run: ExperimentRun {
                student_id: r.get(0)?,
                experiment: r.get(1)?,
                params: r.get(2)?,
                backend: r.get(3)?,
                device: r.get(4)?,
                duration_ms: r.get::<i64>(5)?.max(0) as u64,
                ok: r.get(6)?,
                error: r.get(7)?,
            },
            finished_at: r.get(8)?,
        })
    })
    .collect()
}

/// Runs per student since the history began: `(student, finished, failed, seconds)`,
/// most time first.
pub fn totals_by_student(tx: &mut Tx) -> Result<Vec<(String, u64, u64, f64)>, DbError> {
    tx.query(
        "SELECT student_id, CAST(SUM(ok) AS BIGINT), CAST(SUM(1 - ok) AS BIGINT),
                CAST(SUM(duration_ms) AS BIGINT)
         FROM experiment_runs
         GROUP BY student_id ORDER BY 4 DESC, student_id",
        crate::params![],
    )?
    .iter()
    .map(|r| {
        Ok((
            r.get(0)?,
            r.get::<i64>(1)?.max(0) as u64,
            r.get::<i64>(2)?.max(0) as u64,
            r.get::<i64>(3)?.max(0) as f64 / 1000.0,
        ))
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    #[test]
    fn runs_are_stored_clipped_and_read_newest_first() {
        for (engine, db, _scratch) in backends() {
            let run = |experiment: &str, ok: bool| ExperimentRun {
                student_id: "a".repeat(32),
                experiment: experiment.into(),
                params: "x".repeat(1000),
                backend: "cpu".into(),
                device: "test CPU".into(),
                duration_ms: 1500,
                ok,
                error: (!ok).then(|| "out of memory".into()),
            };
            db.run_blocking(|tx| {
                record(tx, &run("transfer", true))?;
                record(tx, &run("matmul", false))
            })
            .unwrap();
            let stored = db.run_blocking(|tx| recent(tx, 10)).unwrap();
            assert_eq!(stored.len(), 2, "{engine}");
            assert_eq!(stored[0].run.experiment, "matmul", "{engine}");
            assert_eq!(
                stored[0].run.error.as_deref(),
                Some("out of memory"),
                "{engine}"
            );
            assert_eq!(
                stored[1].run.params.chars().count(),
                MAX_TEXT_CHARS,
                "{engine}"
            );
            assert!(stored[1].finished_at.ends_with('Z'), "{engine}");
            let totals = db.run_blocking(totals_by_student).unwrap();
            assert_eq!(totals, vec![("a".repeat(32), 1, 1, 3.0)], "{engine}");
        }
    }
}

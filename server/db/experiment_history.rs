//! The history of finished experiments, kept in the database so the instructor's view
//! survives a restart: who ran what, with which parameters, on which device, for how
//! long, and whether it worked. A row is written by the experiment worker before the
//! job is marked finished, so a student who sees a result can rely on its record.

use serde::Serialize;

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

/// Stores `run` (its texts clipped to [`MAX_TEXT_CHARS`]).
pub fn record(tx: &mut Tx, run: &ExperimentRun) -> Result<(), DbError> {
    tx.execute(
        "INSERT INTO experiment_runs (student_id, experiment, params, backend, device, duration_ms, ok, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        crate::params![
            run.student_id,
            run.experiment,
            clip(&run.params),
            run.backend,
            run.device,
            i64::try_from(run.duration_ms).unwrap_or(i64::MAX),
            run.ok,
            run.error.as_deref().map(clip),
        ],
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

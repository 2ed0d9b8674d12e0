//! The history of finished experiments, kept in the database so the instructor's view
//! survives a restart: who ran what, with which parameters, on which device, for how
//! long, and whether it worked. A row is written by the experiment worker before the
//! job is marked finished, so a student who sees a result can rely on its record.

use rusqlite::{Connection, params};
use serde::Serialize;

use super::DbError;

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
pub fn record(conn: &Connection, run: &ExperimentRun) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO experiment_runs (student_id, experiment, params, backend, device, duration_ms, ok, error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
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
pub fn recent(conn: &Connection, limit: usize) -> Result<Vec<StoredRun>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT student_id, experiment, params, backend, device, duration_ms, ok, error, finished_at
         FROM experiment_runs ORDER BY id DESC LIMIT ?1",
    )?;
    let rows = stmt.query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
        Ok(StoredRun {
            run: ExperimentRun {
                student_id: r.get(0)?,
                experiment: r.get(1)?,
                params: r.get(2)?,
                backend: r.get(3)?,
                device: r.get(4)?,
                duration_ms: r.get::<_, i64>(5)?.max(0) as u64,
                ok: r.get(6)?,
                error: r.get(7)?,
            },
            finished_at: r.get(8)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Runs per student since the history began: `(student, finished, failed, seconds)`.
pub fn totals_by_student(conn: &Connection) -> Result<Vec<(String, u64, u64, f64)>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT student_id, SUM(ok), SUM(1 - ok), SUM(duration_ms) FROM experiment_runs
         GROUP BY student_id ORDER BY SUM(duration_ms) DESC",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get::<_, i64>(1)?.max(0) as u64,
            r.get::<_, i64>(2)?.max(0) as u64,
            r.get::<_, i64>(3)?.max(0) as f64 / 1000.0,
        ))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_stored_clipped_and_read_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::Db::open(&dir.path().join("h.db")).unwrap();
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
        db.run_blocking(|conn| {
            record(conn, &run("transfer", true))?;
            record(conn, &run("matmul", false))
        })
        .unwrap();
        let stored = db.run_blocking(|conn| recent(conn, 10)).unwrap();
        assert_eq!(stored.len(), 2);
        assert_eq!(stored[0].run.experiment, "matmul");
        assert_eq!(stored[0].run.error.as_deref(), Some("out of memory"));
        assert_eq!(stored[1].run.params.chars().count(), MAX_TEXT_CHARS);
        let totals = db.run_blocking(|conn| totals_by_student(conn)).unwrap();
        assert_eq!(totals, vec![("a".repeat(32), 1, 1, 3.0)]);
    }
}

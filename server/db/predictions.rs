//! Learners' predictions (predict, then measure): each one stored with what was
//! measured, on which device, when. A row is written by the experiment worker before
//! the result (and its reveal) is readable, so a reveal the learner saw is on record.
//! From the rows come a learner's calibration and the class's view per experiment.

use serde::Serialize;

use super::{DbError, Row, Tx};

/// One prediction, scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PredictionRow {
    /// The learner.
    pub student_id: String,
    /// The experiment's name.
    pub experiment: String,
    /// The quantity predicted (`transfer.pinned_h2d_gbps`).
    pub quantity: String,
    /// The validated parameters, compact JSON.
    pub params: String,
    /// What the learner predicted.
    pub predicted: f64,
    /// What was measured.
    pub measured: f64,
    /// The unit of both.
    pub unit: String,
    /// `cuda` or `cpu`.
    pub backend: String,
    /// The device's name (with the backend, its fingerprint).
    pub device: String,
}

/// A stored prediction, with when it was made (UTC, ISO 8601).
#[derive(Debug, Clone, Serialize)]
pub struct StoredPrediction {
    /// The prediction.
    #[serde(flatten)]
    pub row: PredictionRow,
    /// When the run that measured it finished.
    pub created_at: String,
}

/// Stores `row`.
pub fn record(tx: &mut Tx, row: &PredictionRow) -> Result<(), DbError> {
    tx.execute(
        "INSERT INTO predictions (student_id, experiment, quantity, params, predicted, measured, unit, backend, device)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        crate::params![
            row.student_id,
            row.experiment,
            row.quantity,
            row.params.chars().take(super::experiment_history::MAX_TEXT_CHARS).collect::<String>(),
            row.predicted,
            row.measured,
            row.unit,
            row.backend,
            row.device,
        ],
    )?;
    Ok(())
}

fn read(row: &Row) -> Result<StoredPrediction, DbError> {
    Ok(StoredPrediction {
        row: PredictionRow {
            student_id: row.get(0)?,
            experiment: row.get(1)?,
            quantity: row.get(2)?,
            params: row.get(3)?,
            predicted: row.get(4)?,
            measured: row.get(5)?,
            unit: row.get(6)?,
            backend: row.get(7)?,
            device: row.get(8)?,
        },
        created_at: row.get(9)?,
    })
}

const COLUMNS: &str = "student_id, experiment, quantity, params, predicted, measured, unit, backend, device, created_at";

/// One learner's predictions, oldest first.
pub fn for_student(tx: &mut Tx, student_id: &str) -> Result<Vec<StoredPrediction>, DbError> {
    tx.query(
        &format!("SELECT {COLUMNS} FROM predictions WHERE student_id = ?1 ORDER BY id"),
        crate::params![student_id],
    )?
    .iter()
    .map(read)
    .collect()
}

/// The class's predictions, oldest first (the instructor's view and CSV).
pub fn all(tx: &mut Tx) -> Result<Vec<StoredPrediction>, DbError> {
    tx.query(
        &format!("SELECT {COLUMNS} FROM predictions ORDER BY id"),
        crate::params![],
    )?
    .iter()
    .map(read)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    #[test]
    fn predictions_are_stored_and_read_back_per_student() {
        for (engine, db, _scratch) in backends() {
            let row = |student: &str, predicted: f64| PredictionRow {
                student_id: student.into(),
                experiment: "timing".into(),
                quantity: "timing.underestimate_factor".into(),
                params: "{}".into(),
                predicted,
                measured: 12.5,
                unit: "×".into(),
                backend: "cpu".into(),
                device: "CPU".into(),
            };
            db.run_blocking(|tx| {
                record(tx, &row("ann", 2.0))?;
                record(tx, &row("bob", 20.0))?;
                record(tx, &row("ann", 10.0))
            })
            .unwrap();
            let ann = db.run_blocking(|tx| for_student(tx, "ann")).unwrap();
            assert_eq!(ann.len(), 2, "{engine}");
            assert_eq!(
                (ann[0].row.predicted, ann[1].row.predicted),
                (2.0, 10.0),
                "{engine}"
            );
            assert_eq!(ann[0].row, row("ann", 2.0), "{engine}");
            assert!(ann[0].created_at.ends_with('Z'), "{engine}");
            assert_eq!(db.run_blocking(all).unwrap().len(), 3, "{engine}");
        }
    }
}

//! Class rounds: the instructor opens a prediction round for one experiment, students
//! predict, the instructor runs it once on the shared GPU and everyone's page reveals
//! the result together. A student's round prediction is stored when they send it (a 2xx
//! means committed); the reveal stores the measurement and copies every round
//! prediction, scored, into the learners' predictions, in one transaction.

use super::predictions::PredictionRow;
use super::{DbError, Tx, migrations};

/// Creates a round (closing any other); returns its id.
pub fn open(tx: &mut Tx, experiment: &str, quantity: &str, params: &str) -> Result<i64, DbError> {
    close(tx)?;
    tx.query_row(
        "INSERT INTO rounds (experiment, quantity, params, status) VALUES (?1, ?2, ?3, 'open') RETURNING id",
        crate::params![experiment, quantity, params],
    )?
    .get(0)
}

/// Ends the round in progress, if any (pages stop showing it).
pub fn close(tx: &mut Tx) -> Result<(), DbError> {
    tx.execute(
        "UPDATE rounds SET closed = 1 WHERE closed = 0",
        crate::params![],
    )?;
    Ok(())
}

/// Sets round `round`'s status (`open`, `running`, `revealed`, `failed`) and error.
pub fn set_status(
    tx: &mut Tx,
    round: i64,
    status: &str,
    error: Option<&str>,
) -> Result<(), DbError> {
    tx.execute(
        "UPDATE rounds SET status = ?2, error = ?3 WHERE id = ?1",
        crate::params![round, status, error],
    )?;
    Ok(())
}

/// A round as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRound {
    /// Its id.
    pub id: i64,
    /// The experiment's name.
    pub experiment: String,
    /// The quantity asked.
    pub quantity: String,
    /// The parameters, as JSON.
    pub params: String,
    /// `open`, `running`, `revealed` or `failed`.
    pub status: String,
    /// The measurement, once revealed.
    pub measured: Option<f64>,
    /// Why the run failed.
    pub error: Option<String>,
    /// Every student's prediction.
    pub predictions: Vec<(String, f64)>,
}

/// The round in progress (not closed), with its predictions, if any.
pub fn current(tx: &mut Tx) -> Result<Option<StoredRound>, DbError> {
    let Some(row) = tx.query_opt(
        "SELECT id, experiment, quantity, params, status, measured, error FROM rounds
         WHERE closed = 0 AND status IS NOT NULL ORDER BY id DESC LIMIT 1",
        crate::params![],
    )?
    else {
        return Ok(None);
    };
    let id: i64 = row.get(0)?;
    let predictions = tx
        .query(
            "SELECT student_id, predicted FROM round_predictions WHERE round_id = ?1",
            crate::params![id],
        )?
        .iter()
        .map(|r| Ok((r.get(0)?, r.get(1)?)))
        .collect::<Result<_, DbError>>()?;
    Ok(Some(StoredRound {
        id,
        experiment: row.get(1)?,
        quantity: row.get(2)?,
        params: row.get(3)?,
        status: row.get(4)?,
        measured: row.get(5)?,
        error: row.get(6)?,
        predictions,
    }))
}

/// Stores (or replaces) `student`'s prediction in round `round`.
pub fn predict(tx: &mut Tx, round: i64, student: &str, predicted: f64) -> Result<(), DbError> {
    tx.execute(
        "INSERT INTO round_predictions (round_id, student_id, predicted) VALUES (?1, ?2, ?3)
         ON CONFLICT (round_id, student_id) DO UPDATE SET predicted = excluded.predicted",
        crate::params![round, student, predicted],
    )?;
    Ok(())
}

/// How many students predicted in round `round`.
pub fn count(tx: &mut Tx, round: i64) -> Result<usize, DbError> {
    let n: i64 = tx
        .query_row(
            "SELECT COUNT(*) FROM round_predictions WHERE round_id = ?1",
            crate::params![round],
        )?
        .get(0)?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Records the measurement of round `round` and copies its predictions into
/// `predictions`, scored against it (`template` gives everything but the student and
/// the predicted value), in the caller's transaction. Returns how many predictions were
/// revealed.
pub fn reveal(tx: &mut Tx, round: i64, template: &PredictionRow) -> Result<usize, DbError> {
    let now = migrations::now(tx);
    tx.execute(
        &format!(
            "UPDATE rounds SET measured = ?2, backend = ?3, device = ?4, revealed_at = {now},
                    status = 'revealed' WHERE id = ?1"
        ),
        crate::params![round, template.measured, template.backend, template.device],
    )?;
    // In student order, so both engines number the copies alike.
    tx.execute(
        "INSERT INTO predictions (student_id, experiment, quantity, params, predicted, measured, unit, backend, device)
         SELECT student_id, ?2, ?3, ?4, predicted, ?5, ?6, ?7, ?8 FROM round_predictions
         WHERE round_id = ?1 ORDER BY student_id",
        crate::params![
            round,
            template.experiment,
            template.quantity,
            template.params,
            template.measured,
            template.unit,
            template.backend,
            template.device
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    #[test]
    fn a_round_keeps_one_prediction_per_student_and_reveals_them_all() {
        for (engine, db, _scratch) in backends() {
            let round = db
                .run_blocking(|tx| open(tx, "timing", "timing.underestimate_factor", "{}"))
                .unwrap();
            db.run_blocking(|tx| {
                predict(tx, round, "ann", 2.0)?;
                predict(tx, round, "bob", 30.0)?;
                predict(tx, round, "ann", 5.0)
            })
            .unwrap();
            assert_eq!(
                db.run_blocking(|tx| count(tx, round)).unwrap(),
                2,
                "{engine}"
            );
            let template = PredictionRow {
                student_id: String::new(),
                experiment: "timing".into(),
                quantity: "timing.underestimate_factor".into(),
                params: "{}".into(),
                predicted: 0.0,
                measured: 10.0,
                unit: "×".into(),
                backend: "cpu".into(),
                device: "CPU".into(),
            };
            assert_eq!(
                db.run_blocking(|tx| reveal(tx, round, &template)).unwrap(),
                2,
                "{engine}"
            );
            let ann = db
                .run_blocking(|tx| crate::db::predictions::for_student(tx, "ann"))
                .unwrap();
            assert_eq!(
                (ann.len(), ann[0].row.predicted, ann[0].row.measured),
                (1, 5.0, 10.0),
                "{engine}"
            );
            let revealed: Option<String> = db
                .run_blocking(|tx| {
                    tx.query_row(
                        "SELECT revealed_at FROM rounds WHERE id = ?1",
                        crate::params![round],
                    )?
                    .get(0)
                })
                .unwrap();
            assert!(revealed.is_some_and(|at| at.ends_with('Z')), "{engine}");
        }
    }

    #[test]
    fn the_current_round_is_the_last_opened_until_closed() {
        for (engine, db, _scratch) in backends() {
            assert_eq!(db.run_blocking(current).unwrap(), None, "{engine}");
            let first = db.run_blocking(|tx| open(tx, "timing", "q", "{}")).unwrap();
            let second = db
                .run_blocking(|tx| open(tx, "streams", "s", "{}"))
                .unwrap();
            db.run_blocking(|tx| {
                predict(tx, second, "ann", 2.0)?;
                set_status(tx, second, "failed", Some("no GPU"))
            })
            .unwrap();
            let now = db.run_blocking(current).unwrap().unwrap();
            assert_ne!(
                now.id, first,
                "opening a round closes the one before: {engine}"
            );
            assert_eq!(
                (
                    now.id,
                    now.experiment.as_str(),
                    now.status.as_str(),
                    now.error.as_deref()
                ),
                (second, "streams", "failed", Some("no GPU")),
                "{engine}"
            );
            assert_eq!(now.predictions, vec![("ann".to_string(), 2.0)], "{engine}");
            db.run_blocking(close).unwrap();
            assert_eq!(db.run_blocking(current).unwrap(), None, "{engine}");
        }
    }
}

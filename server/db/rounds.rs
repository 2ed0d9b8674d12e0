//! Class rounds: the instructor opens a prediction round for one experiment, students
//! predict, the instructor runs it once on the shared GPU and everyone's page reveals
//! the result together. A student's round prediction is stored when they send it (a 2xx
//! means committed); the reveal stores the measurement and copies every round
//! prediction, scored, into the learners' predictions, in one transaction.

use rusqlite::{Connection, params};

use super::DbError;
use super::predictions::PredictionRow;

/// Creates a round; returns its id.
pub fn open(
    conn: &Connection,
    experiment: &str,
    quantity: &str,
    params: &str,
) -> Result<i64, DbError> {
    conn.execute(
        "INSERT INTO rounds (experiment, quantity, params) VALUES (?1, ?2, ?3)",
        params![experiment, quantity, params],
    )?;
    Ok(conn.last_insert_rowid())
}

/// Stores (or replaces) `student`'s prediction in round `round`.
pub fn predict(
    conn: &Connection,
    round: i64,
    student: &str,
    predicted: f64,
) -> Result<(), DbError> {
    conn.execute(
        "INSERT INTO round_predictions (round_id, student_id, predicted) VALUES (?1, ?2, ?3)
         ON CONFLICT (round_id, student_id) DO UPDATE SET predicted = excluded.predicted",
        params![round, student, predicted],
    )?;
    Ok(())
}

/// How many students predicted in round `round`.
pub fn count(conn: &Connection, round: i64) -> Result<usize, DbError> {
    let n: i64 = conn.query_row(
        "SELECT COUNT(*) FROM round_predictions WHERE round_id = ?1",
        [round],
        |r| r.get(0),
    )?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Records the measurement of round `round` and copies its predictions into
/// `predictions`, scored against it (`template` gives everything but the student and
/// the predicted value). Returns how many predictions were revealed.
pub fn reveal(
    conn: &mut Connection,
    round: i64,
    template: &PredictionRow,
) -> Result<usize, DbError> {
    let tx = conn.transaction()?;
    tx.execute(
        "UPDATE rounds SET measured = ?2, backend = ?3, device = ?4,
             revealed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1",
        params![round, template.measured, template.backend, template.device],
    )?;
    let copied = tx.execute(
        "INSERT INTO predictions (student_id, experiment, quantity, params, predicted, measured, unit, backend, device)
         SELECT student_id, ?2, ?3, ?4, predicted, ?5, ?6, ?7, ?8 FROM round_predictions WHERE round_id = ?1",
        params![
            round,
            template.experiment,
            template.quantity,
            template.params,
            template.measured,
            template.unit,
            template.backend,
            template.device
        ],
    )?;
    tx.commit()?;
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;

    #[test]
    fn a_round_keeps_one_prediction_per_student_and_reveals_them_all() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("r.db")).unwrap();
        let round = db
            .run_blocking(|c| open(c, "timing", "timing.underestimate_factor", "{}"))
            .unwrap();
        db.run_blocking(|c| {
            predict(c, round, "ann", 2.0)?;
            predict(c, round, "bob", 30.0)?;
            predict(c, round, "ann", 5.0)
        })
        .unwrap();
        assert_eq!(db.run_blocking(|c| count(c, round)).unwrap(), 2);
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
        assert_eq!(db.run_blocking(|c| reveal(c, round, &template)).unwrap(), 2);
        let ann = db
            .run_blocking(|c| crate::db::predictions::for_student(c, "ann"))
            .unwrap();
        assert_eq!(
            (ann.len(), ann[0].row.predicted, ann[0].row.measured),
            (1, 5.0, 10.0)
        );
    }
}

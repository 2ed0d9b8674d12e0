//! Class rounds: the instructor opens a prediction round for one experiment, students
//! predict, the instructor runs it once on the shared GPU and everyone's page reveals
//! the result together. A student's round prediction is stored when they send it (a 2xx
//! means committed). The round turns `running` in the transaction that queues its job
//! (the job names the round), and the worker that completes the job reveals it in the
//! completing transaction ([`super::job_claims::complete`]): the measurement, with the
//! worker's device, and every round prediction copied, scored, into the learners'
//! predictions — in SQL, so no web node needs to be alive for it.

use super::clock::text_now;
use super::{DbError, Tx};

/// Creates a round (closing any other) asking for `quantity` in `unit`; returns its id.
pub fn open(
    tx: &mut Tx,
    experiment: &str,
    quantity: &str,
    unit: &str,
    params: &str,
) -> Result<i64, DbError> {
    close(tx)?;
    tx.query_row(
        "INSERT INTO rounds (experiment, quantity, unit, params, status) VALUES (?1, ?2, ?3, ?4, 'open') RETURNING id",
        crate::params![experiment, quantity, unit, params],
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

/// What a round's run measured, and where.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Taken<'a> {
    /// The measured value.
    pub value: f64,
    /// Its unit (kept only when the round has none of its question's).
    pub unit: &'a str,
    /// The backend that measured it (`cuda` or `cpu`).
    pub backend: &'a str,
    /// The name of the device that measured it.
    pub device: &'a str,
}

/// Reveals running round `round` with the measurement `taken` and copies its
/// predictions into `predictions`, scored against it, in the caller's transaction (the
/// worker's, completing the round's job). How many predictions were revealed; 0 and
/// nothing written when the round is not running.
pub fn reveal(tx: &mut Tx, round: i64, taken: &Taken) -> Result<usize, DbError> {
    let now = text_now(tx);
    let running = tx.execute(
        &format!(
            "UPDATE rounds SET measured = ?2, unit = COALESCE(unit, ?3), backend = ?4, device = ?5,
                    revealed_at = {now}, status = 'revealed', error = NULL
             WHERE id = ?1 AND status = 'running'"
        ),
        crate::params![round, taken.value, taken.unit, taken.backend, taken.device],
    )?;
    if running != 1 {
        return Ok(0);
    }
    // In student order, so both engines number the copies alike.
    tx.execute(
        "INSERT INTO predictions (student_id, experiment, quantity, params, predicted, measured, unit, backend, device)
         SELECT p.student_id, r.experiment, r.quantity, r.params, p.predicted, r.measured, r.unit, r.backend, r.device
         FROM round_predictions p JOIN rounds r ON r.id = p.round_id
         WHERE p.round_id = ?1 ORDER BY p.student_id",
        crate::params![round],
    )
}

/// Fails running round `round` with `error` (its run failed), in the caller's
/// transaction; a round no longer running is left as it is.
pub fn fail(tx: &mut Tx, round: i64, error: &str) -> Result<(), DbError> {
    tx.execute(
        "UPDATE rounds SET status = 'failed', error = ?2 WHERE id = ?1 AND status = 'running'",
        crate::params![round, error],
    )?;
    Ok(())
}

/// Fails each running round whose job ended without completing (reaped twice, or failed
/// waiting when a one-box server stopped) with the job's error, or whose job is gone (a
/// round left running by an older version); how many.
pub fn fail_abandoned(tx: &mut Tx) -> Result<usize, DbError> {
    tx.execute(
        "UPDATE rounds SET status = 'failed', error = COALESCE(
             (SELECT j.error FROM jobs j WHERE j.round_id = rounds.id AND j.status = 'failed' LIMIT 1),
             'the run was lost before it finished; open the round again and run it')
         WHERE status = 'running' AND NOT EXISTS
             (SELECT 1 FROM jobs j WHERE j.round_id = rounds.id AND j.status IN ('queued', 'running'))",
        crate::params![],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    const TAKEN: Taken = Taken {
        value: 10.0,
        unit: "x",
        backend: "cpu",
        device: "the worker's CPU",
    };

    #[test]
    fn a_round_keeps_one_prediction_per_student_and_reveals_them_all() {
        for (engine, db, _scratch) in backends() {
            let round = db
                .run_blocking(|tx| open(tx, "timing", "timing.underestimate_factor", "×", "{}"))
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
            assert_eq!(
                db.run_blocking(|tx| reveal(tx, round, &TAKEN)).unwrap(),
                0,
                "an open round is not revealed: {engine}"
            );
            db.run_blocking(|tx| set_status(tx, round, "running", None))
                .unwrap();
            assert_eq!(
                db.run_blocking(|tx| reveal(tx, round, &TAKEN)).unwrap(),
                2,
                "{engine}"
            );
            assert_eq!(
                db.run_blocking(|tx| reveal(tx, round, &TAKEN)).unwrap(),
                0,
                "revealed once: {engine}"
            );
            let ann = db
                .run_blocking(|tx| crate::db::predictions::for_student(tx, "ann"))
                .unwrap();
            assert_eq!(ann.len(), 1, "{engine}");
            let row = &ann[0].row;
            assert_eq!(
                (
                    row.predicted,
                    row.measured,
                    row.unit.as_str(),
                    row.device.as_str()
                ),
                (5.0, 10.0, "×", "the worker's CPU"),
                "the round's own unit, the worker's device: {engine}"
            );
            let (revealed, device): (Option<String>, String) = db
                .run_blocking(|tx| {
                    let row = tx.query_row(
                        "SELECT revealed_at, device FROM rounds WHERE id = ?1",
                        crate::params![round],
                    )?;
                    Ok((row.get(0)?, row.get(1)?))
                })
                .unwrap();
            assert!(revealed.is_some_and(|at| at.ends_with('Z')), "{engine}");
            assert_eq!(device, "the worker's CPU", "{engine}");
        }
    }

    #[test]
    fn a_running_round_whose_job_is_gone_fails_and_a_failed_run_fails_it() {
        for (engine, db, _scratch) in backends() {
            let round = db
                .run_blocking(|tx| {
                    let round = open(tx, "timing", "q", "×", "{}")?;
                    set_status(tx, round, "running", None)?;
                    Ok(round)
                })
                .unwrap();
            assert_eq!(db.run_blocking(fail_abandoned).unwrap(), 1, "{engine}");
            let now = db.run_blocking(current).unwrap().unwrap();
            assert_eq!((now.id, now.status.as_str()), (round, "failed"), "{engine}");
            assert!(
                now.error.as_deref().is_some_and(|e| e.contains("lost")),
                "{engine}: {:?}",
                now.error
            );
            let again = db
                .run_blocking(|tx| {
                    let round = open(tx, "timing", "q", "×", "{}")?;
                    set_status(tx, round, "running", None)?;
                    fail(tx, round, "out of memory")?;
                    Ok(round)
                })
                .unwrap();
            let now = db.run_blocking(current).unwrap().unwrap();
            assert_eq!(
                (now.id, now.status.as_str(), now.error.as_deref()),
                (again, "failed", Some("out of memory")),
                "{engine}"
            );
            assert_eq!(
                db.run_blocking(|tx| reveal(tx, again, &TAKEN)).unwrap(),
                0,
                "a failed round stays failed: {engine}"
            );
        }
    }

    #[test]
    fn the_current_round_is_the_last_opened_until_closed() {
        for (engine, db, _scratch) in backends() {
            assert_eq!(db.run_blocking(current).unwrap(), None, "{engine}");
            let first = db
                .run_blocking(|tx| open(tx, "timing", "q", "×", "{}"))
                .unwrap();
            let second = db
                .run_blocking(|tx| open(tx, "streams", "s", "GB/s", "{}"))
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

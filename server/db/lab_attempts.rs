//! The tuning labs' attempts: one row per graded lab run, written by the worker in the
//! same transaction that records the run ([`super::job_claims::complete`]), and read as
//! gradebook cells (best score and attempts per student and lab, the column id
//! `lab:<lab>`) and as the labs a student has passed (home and completion pages).

use super::gradebook::GradeCell;
use super::migrations::now;
use super::{DbError, Tx};
use crate::params;

/// The gradebook column id of lab `lab` (`lab:feed-the-gpu`).
pub fn column(lab: &str) -> String {
    format!("lab:{lab}")
}

/// Records the lab attempt in `result` (the `lab` experiment's result JSON) for
/// `student`; a result without a lab and a verdict records nothing.
pub fn record(
    tx: &mut Tx,
    student: &str,
    result: &serde_json::Value,
    backend: &str,
) -> Result<(), DbError> {
    let (Some(lab), Some(verdict)) = (
        result.get("lab").and_then(|v| v.as_str()),
        result.get("verdict").and_then(|v| v.as_str()),
    ) else {
        return Ok(());
    };
    let score = result
        .get("score_percent")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.0)
        .clamp(0.0, 100.0);
    let now = now(tx);
    tx.execute(
        &format!(
            "INSERT INTO lab_attempts (student_id, lab, verdict, score, passed, backend, attempted_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, {now})"
        ),
        params![student, lab, verdict, score, verdict == "pass", backend],
    )?;
    Ok(())
}

/// Every student's best lab score, attempts and pass, as gradebook cells.
pub fn grades(tx: &mut Tx) -> Result<Vec<GradeCell>, DbError> {
    tx.query(
        "SELECT a.student_id, s.display_name, a.lab, MAX(a.score), COUNT(*), MAX(a.passed),
                MIN(a.attempted_at), MAX(a.attempted_at)
         FROM lab_attempts a LEFT JOIN students s ON s.id = a.student_id
         GROUP BY a.student_id, s.display_name, a.lab",
        params![],
    )?
    .iter()
    .map(|r| {
        let lab: String = r.get(2)?;
        Ok(GradeCell {
            student_id: r.get(0)?,
            display_name: r.get(1)?,
            quiz_id: column(&lab),
            best_percent: r.get(3)?,
            attempts: r.get(4)?,
            passed: r.get(5)?,
            first_attempt_at: r.get(6)?,
            last_attempt_at: r.get(7)?,
        })
    })
    .collect()
}

/// The labs `student` has passed at least once, by name.
pub fn passed(tx: &mut Tx, student: &str) -> Result<Vec<String>, DbError> {
    tx.query(
        "SELECT DISTINCT lab FROM lab_attempts WHERE student_id = ?1 AND passed = 1 ORDER BY lab",
        params![student],
    )?
    .iter()
    .map(|r| r.get(0))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;
    use serde_json::json;

    #[test]
    fn attempts_become_best_score_attempts_and_passes() {
        for (engine, db, _scratch) in backends() {
            db.run_blocking(|tx| {
                let r = |verdict, score| json!({"lab": "feed-the-gpu", "verdict": verdict, "score_percent": score});
                record(tx, "ann", &r("fail", 0.0), "cpu")?;
                record(tx, "ann", &r("inconclusive", 50.0), "cpu")?;
                record(tx, "bob", &r("pass", 100.0), "cpu")?;
                record(tx, "bob", &json!({"no": "lab"}), "cpu")?;
                Ok(())
            })
            .unwrap();
            let cells = db.run_blocking(grades).unwrap();
            let ann = cells.iter().find(|c| c.student_id == "ann").unwrap();
            assert_eq!(
                (ann.attempts, ann.passed, ann.best_percent),
                (2, false, 50.0),
                "{engine}"
            );
            assert_eq!(ann.quiz_id, "lab:feed-the-gpu");
            let bob = cells.iter().find(|c| c.student_id == "bob").unwrap();
            assert_eq!((bob.attempts, bob.passed), (1, true), "{engine}");
            assert_eq!(
                db.run_blocking(|tx| passed(tx, "bob")).unwrap(),
                ["feed-the-gpu"]
            );
            assert!(db.run_blocking(|tx| passed(tx, "ann")).unwrap().is_empty());
        }
    }
}

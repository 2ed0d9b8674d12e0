//! A student's own records: creating the student row, saving a graded attempt (with
//! every answer) in one transaction, reading best scores per quiz, export (with the
//! student's predictions) and reset.

use serde::Serialize;

use super::{DbError, Tx};
use crate::course::grading::Graded;

/// Best result of one student on one quiz.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct QuizProgress {
    /// Lesson slug or `final-exam`.
    pub quiz_id: String,
    /// Correct answers in the best attempt.
    pub best_correct: u32,
    /// Questions in that attempt.
    pub best_total: u32,
    /// Best score in percent.
    pub best_percent: f64,
    /// How many attempts.
    pub attempts: u32,
    /// Whether any attempt passed.
    pub passed: bool,
}

/// One stored attempt, for export.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptRecord {
    /// Attempt id.
    pub id: i64,
    /// Quiz taken.
    pub quiz_id: String,
    /// Correct answers.
    pub correct: u32,
    /// Questions.
    pub total: u32,
    /// Passed (strictly more than 75%).
    pub passed: bool,
    /// When, UTC.
    pub submitted_at: String,
}

/// Everything stored about one student.
#[derive(Debug, Clone, Serialize)]
pub struct StudentExport {
    /// The student id (the cookie value).
    pub student_id: String,
    /// The chosen display name, if any.
    pub display_name: Option<String>,
    /// Best result per quiz.
    pub progress: Vec<QuizProgress>,
    /// Every attempt, oldest first.
    pub attempts: Vec<AttemptRecord>,
    /// Every prediction made before a live experiment, oldest first.
    pub predictions: Vec<super::predictions::StoredPrediction>,
}

/// Creates the student row if it does not exist yet.
pub fn ensure_student(tx: &mut Tx, student: &str) -> Result<(), DbError> {
    tx.execute(
        "INSERT INTO students (id) VALUES (?1) ON CONFLICT DO NOTHING",
        crate::params![student],
    )?;
    Ok(())
}

/// Sets (or clears, with `None`) the display name.
pub fn set_display_name(tx: &mut Tx, student: &str, name: Option<&str>) -> Result<(), DbError> {
    ensure_student(tx, student)?;
    tx.execute(
        "UPDATE students SET display_name = ?2 WHERE id = ?1",
        crate::params![student, name],
    )?;
    Ok(())
}

/// The display name, if the student chose one.
pub fn display_name(tx: &mut Tx, student: &str) -> Result<Option<String>, DbError> {
    match tx.query_opt(
        "SELECT display_name FROM students WHERE id = ?1",
        crate::params![student],
    )? {
        Some(row) => row.get(0),
        None => Ok(None),
    }
}

/// Saves a graded attempt and its answers atomically (in the caller's transaction);
/// returns the attempt id. The caller acknowledges the attempt only after the
/// transaction commits.
pub fn record_attempt(
    tx: &mut Tx,
    student: &str,
    quiz_id: &str,
    graded: &Graded,
) -> Result<i64, DbError> {
    ensure_student(tx, student)?;
    let attempt: i64 = tx
        .query_row(
            "INSERT INTO attempts (student_id, quiz_id, correct, total, passed)
             VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
            crate::params![
                student,
                quiz_id,
                graded.correct,
                graded.total,
                graded.passed
            ],
        )?
        .get(0)?;
    // A question that did not count (hardware-graded, not measured yet) was not
    // graded: the attempt holds one answer per counted question.
    for q in graded.questions.iter().filter(|q| q.counted) {
        let given = serde_json::to_string(&q.given).unwrap_or_else(|_| "null".into());
        tx.execute(
            "INSERT INTO answers (attempt_id, question_id, given, correct) VALUES (?1, ?2, ?3, ?4)",
            crate::params![attempt, q.id, given, q.correct],
        )?;
    }
    Ok(attempt)
}

/// Best result per quiz the student has attempted, by quiz id.
pub fn progress(tx: &mut Tx, student: &str) -> Result<Vec<QuizProgress>, DbError> {
    let mut best = tx
        .query(
            "SELECT quiz_id, correct, total, attempts, passed FROM (
                 SELECT quiz_id, correct, total,
                        COUNT(*) OVER (PARTITION BY quiz_id) AS attempts,
                        MAX(passed) OVER (PARTITION BY quiz_id) AS passed,
                        ROW_NUMBER() OVER (PARTITION BY quiz_id
                            ORDER BY CAST(correct AS DOUBLE PRECISION) / total DESC, id) AS place
                 FROM attempts WHERE student_id = ?1
             ) ranked WHERE place = 1",
            crate::params![student],
        )?
        .iter()
        .map(|r| {
            let correct: u32 = r.get(1)?;
            let total: u32 = r.get(2)?;
            Ok(QuizProgress {
                quiz_id: r.get(0)?,
                best_correct: correct,
                best_total: total,
                best_percent: percent(correct, total),
                attempts: r.get(3)?,
                passed: r.get(4)?,
            })
        })
        .collect::<Result<Vec<_>, DbError>>()?;
    // Byte order on both engines (PostgreSQL would sort text by its locale).
    best.sort_by(|a, b| a.quiz_id.cmp(&b.quiz_id));
    Ok(best)
}

/// Score in percent, rounded as every page shows it ([`crate::format::percent`]).
pub fn percent(correct: u32, total: u32) -> f64 {
    crate::format::percent(correct as usize, total as usize)
}

/// Everything stored about the student.
pub fn export(tx: &mut Tx, student: &str) -> Result<StudentExport, DbError> {
    let attempts = tx
        .query(
            "SELECT id, quiz_id, correct, total, passed, submitted_at FROM attempts
             WHERE student_id = ?1 ORDER BY id",
            crate::params![student],
        )?
        .iter()
        .map(|r| {
            Ok(AttemptRecord {
                id: r.get(0)?,
                quiz_id: r.get(1)?,
                correct: r.get(2)?,
                total: r.get(3)?,
                passed: r.get(4)?,
                submitted_at: r.get(5)?,
            })
        })
        .collect::<Result<_, DbError>>()?;
    Ok(StudentExport {
        student_id: student.to_string(),
        display_name: display_name(tx, student)?,
        progress: progress(tx, student)?,
        attempts,
        predictions: super::predictions::for_student(tx, student)?,
    })
}

/// Deletes the student's attempts and name (the id itself stays, it is only a cookie).
pub fn reset(tx: &mut Tx, student: &str) -> Result<(), DbError> {
    tx.execute(
        "DELETE FROM attempts WHERE student_id = ?1",
        crate::params![student],
    )?;
    tx.execute(
        "DELETE FROM predictions WHERE student_id = ?1",
        crate::params![student],
    )?;
    tx.execute(
        "DELETE FROM round_predictions WHERE student_id = ?1",
        crate::params![student],
    )?;
    super::learner_runs::remove_all(tx, student)?;
    tx.execute(
        "UPDATE students SET display_name = NULL WHERE id = ?1",
        crate::params![student],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    fn graded(correct: usize, total: usize) -> Graded {
        Graded {
            correct,
            total,
            percent: percent(correct as u32, total as u32),
            passed: correct * 100 > total * 75,
            questions: Vec::new(),
        }
    }

    #[test]
    fn attempts_give_the_best_score_per_quiz_and_reset_clears_them() {
        for (engine, db, _scratch) in backends() {
            let ids = db
                .run_blocking(|tx| {
                    Ok([
                        record_attempt(tx, "ann", "quiz-b", &graded(1, 3))?,
                        record_attempt(tx, "ann", "quiz-b", &graded(3, 4))?,
                        record_attempt(tx, "ann", "quiz-b", &graded(6, 8))?,
                        record_attempt(tx, "ann", "quiz-a", &graded(4, 4))?,
                        record_attempt(tx, "bob", "quiz-a", &graded(0, 4))?,
                    ])
                })
                .unwrap();
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{engine}: {ids:?}");
            db.run_blocking(|tx| set_display_name(tx, "ann", Some("Ann")))
                .unwrap();
            let stored = db.run_blocking(|tx| export(tx, "ann")).unwrap();
            assert_eq!(stored.display_name.as_deref(), Some("Ann"), "{engine}");
            assert_eq!(
                stored.progress,
                vec![
                    QuizProgress {
                        quiz_id: "quiz-a".into(),
                        best_correct: 4,
                        best_total: 4,
                        best_percent: 100.0,
                        attempts: 1,
                        passed: true,
                    },
                    // 3 of 4 and 6 of 8 tie: the earlier attempt is the best.
                    QuizProgress {
                        quiz_id: "quiz-b".into(),
                        best_correct: 3,
                        best_total: 4,
                        best_percent: 75.0,
                        attempts: 3,
                        passed: false,
                    },
                ],
                "{engine}"
            );
            assert_eq!(stored.attempts.len(), 4, "{engine}");
            assert_eq!(stored.attempts[0].id, ids[0], "{engine}");
            assert!(stored.attempts[0].submitted_at.ends_with('Z'), "{engine}");

            db.run_blocking(|tx| reset(tx, "ann")).unwrap();
            let stored = db.run_blocking(|tx| export(tx, "ann")).unwrap();
            assert_eq!(
                (
                    stored.display_name,
                    stored.progress.len(),
                    stored.attempts.len()
                ),
                (None, 0, 0),
                "{engine}"
            );
            let bob = db.run_blocking(|tx| progress(tx, "bob")).unwrap();
            assert_eq!(bob.len(), 1, "{engine}: only ann's records go");
            assert_eq!(
                db.run_blocking(|tx| display_name(tx, "nobody")).unwrap(),
                None,
                "{engine}"
            );
        }
    }

    #[test]
    fn a_failed_transaction_stores_nothing() {
        for (engine, db, _scratch) in backends() {
            let failed = db.run_blocking(|tx| {
                record_attempt(tx, "ann", "quiz-a", &graded(1, 2))?;
                tx.execute("INSERT INTO no_such_table VALUES (1)", crate::params![])
            });
            assert!(failed.is_err(), "{engine}");
            let stored = db.run_blocking(|tx| export(tx, "ann")).unwrap();
            assert!(stored.attempts.is_empty(), "{engine}: rolled back");
        }
    }
}

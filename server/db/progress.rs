//! A student's own records: creating the student row, saving a graded attempt (with
//! every answer) in one transaction, reading best scores per quiz, export (with the
//! student's predictions) and reset.

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::DbError;
use crate::course::quiz::Graded;

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
pub fn ensure_student(conn: &Connection, student: &str) -> Result<(), DbError> {
    conn.execute("INSERT OR IGNORE INTO students (id) VALUES (?1)", [student])?;
    Ok(())
}

/// Sets (or clears, with `None`) the display name.
pub fn set_display_name(
    conn: &Connection,
    student: &str,
    name: Option<&str>,
) -> Result<(), DbError> {
    ensure_student(conn, student)?;
    conn.execute(
        "UPDATE students SET display_name = ?2 WHERE id = ?1",
        params![student, name],
    )?;
    Ok(())
}

/// The display name, if the student chose one.
pub fn display_name(conn: &Connection, student: &str) -> Result<Option<String>, DbError> {
    Ok(conn
        .query_row(
            "SELECT display_name FROM students WHERE id = ?1",
            [student],
            |r| r.get(0),
        )
        .optional()?
        .flatten())
}

/// Saves a graded attempt and its answers atomically; returns the attempt id. The
/// caller acknowledges the attempt only after this returns, i.e. after the commit.
pub fn record_attempt(
    conn: &mut Connection,
    student: &str,
    quiz_id: &str,
    graded: &Graded,
) -> Result<i64, DbError> {
    let tx = conn.transaction()?;
    ensure_student(&tx, student)?;
    tx.execute(
        "INSERT INTO attempts (student_id, quiz_id, correct, total, passed) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![student, quiz_id, graded.correct as i64, graded.total as i64, graded.passed],
    )?;
    let attempt = tx.last_insert_rowid();
    {
        let mut insert = tx.prepare(
            "INSERT INTO answers (attempt_id, question_id, given, correct) VALUES (?1, ?2, ?3, ?4)",
        )?;
        // A question that did not count (hardware-graded, not measured yet) was not
        // graded: the attempt holds one answer per counted question.
        for q in graded.questions.iter().filter(|q| q.counted) {
            let given = serde_json::to_string(&q.given).unwrap_or_else(|_| "null".into());
            insert.execute(params![attempt, q.id, given, q.correct])?;
        }
    }
    tx.commit()?;
    Ok(attempt)
}

/// Best result per quiz the student has attempted.
pub fn progress(conn: &Connection, student: &str) -> Result<Vec<QuizProgress>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT quiz_id, correct, total, attempts, passed FROM (
             SELECT quiz_id, correct, total,
                    COUNT(*) OVER (PARTITION BY quiz_id) AS attempts,
                    MAX(passed) OVER (PARTITION BY quiz_id) AS passed,
                    ROW_NUMBER() OVER (PARTITION BY quiz_id ORDER BY CAST(correct AS REAL) / total DESC, id) AS rank
             FROM attempts WHERE student_id = ?1
         ) WHERE rank = 1 ORDER BY quiz_id",
    )?;
    let rows = stmt.query_map([student], |r| {
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
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Score in percent, rounded as every page shows it ([`crate::course::quiz::percent`]).
pub fn percent(correct: u32, total: u32) -> f64 {
    crate::course::quiz::percent(correct as usize, total as usize)
}

/// Everything stored about the student.
pub fn export(conn: &Connection, student: &str) -> Result<StudentExport, DbError> {
    let mut stmt = conn.prepare(
        "SELECT id, quiz_id, correct, total, passed, submitted_at FROM attempts WHERE student_id = ?1 ORDER BY id",
    )?;
    let attempts = stmt
        .query_map([student], |r| {
            Ok(AttemptRecord {
                id: r.get(0)?,
                quiz_id: r.get(1)?,
                correct: r.get(2)?,
                total: r.get(3)?,
                passed: r.get(4)?,
                submitted_at: r.get(5)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(StudentExport {
        student_id: student.to_string(),
        display_name: display_name(conn, student)?,
        progress: progress(conn, student)?,
        attempts,
        predictions: super::predictions::for_student(conn, student)?,
    })
}

/// Deletes the student's attempts and name (the id itself stays, it is only a cookie).
pub fn reset(conn: &mut Connection, student: &str) -> Result<(), DbError> {
    let tx = conn.transaction()?;
    tx.execute("DELETE FROM attempts WHERE student_id = ?1", [student])?;
    tx.execute("DELETE FROM predictions WHERE student_id = ?1", [student])?;
    tx.execute(
        "DELETE FROM round_predictions WHERE student_id = ?1",
        [student],
    )?;
    tx.execute(
        "UPDATE students SET display_name = NULL WHERE id = ?1",
        [student],
    )?;
    tx.commit()?;
    Ok(())
}

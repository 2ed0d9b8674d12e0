//! The instructor's view of the class: best result per student and quiz, and the
//! questions answered wrong most often. Read-only queries over the attempts tables.

use rusqlite::Connection;
use serde::Serialize;

use super::DbError;
use super::progress::percent;

/// One student's best result on one quiz.
#[derive(Debug, Clone, Serialize)]
pub struct GradeCell {
    /// Student id.
    pub student_id: String,
    /// Display name, if chosen.
    pub display_name: Option<String>,
    /// Quiz id.
    pub quiz_id: String,
    /// Best score in percent.
    pub best_percent: f64,
    /// Attempts made.
    pub attempts: u32,
    /// Passed at least once.
    pub passed: bool,
}

/// How often one question was answered wrong.
#[derive(Debug, Clone, Serialize)]
pub struct MissedQuestion {
    /// Quiz id.
    pub quiz_id: String,
    /// Question id.
    pub question_id: String,
    /// Wrong answers.
    pub wrong: u32,
    /// All answers.
    pub answered: u32,
    /// `wrong / answered` in percent.
    pub wrong_percent: f64,
}

/// Every student's best result per attempted quiz, by student then quiz.
pub fn grades(conn: &Connection) -> Result<Vec<GradeCell>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT a.student_id, s.display_name, a.quiz_id,
                MAX(a.correct * 1000 / a.total), COUNT(*), MAX(a.passed)
         FROM attempts a JOIN students s ON s.id = a.student_id
         GROUP BY a.student_id, a.quiz_id
         ORDER BY COALESCE(s.display_name, '~'), a.student_id, a.quiz_id",
    )?;
    let rows = stmt.query_map([], |r| {
        let permille: u32 = r.get(3)?;
        Ok(GradeCell {
            student_id: r.get(0)?,
            display_name: r.get(1)?,
            quiz_id: r.get(2)?,
            best_percent: percent(permille, 1000),
            attempts: r.get(4)?,
            passed: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Questions with at least one wrong answer, most-missed share first within each quiz.
pub fn most_missed(conn: &Connection) -> Result<Vec<MissedQuestion>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT a.quiz_id, q.question_id, SUM(1 - q.correct), COUNT(*)
         FROM answers q JOIN attempts a ON a.id = q.attempt_id
         GROUP BY a.quiz_id, q.question_id
         HAVING SUM(1 - q.correct) > 0
         ORDER BY a.quiz_id, CAST(SUM(1 - q.correct) AS REAL) / COUNT(*) DESC, q.question_id",
    )?;
    let rows = stmt.query_map([], |r| {
        let wrong: u32 = r.get(2)?;
        let answered: u32 = r.get(3)?;
        Ok(MissedQuestion {
            quiz_id: r.get(0)?,
            question_id: r.get(1)?,
            wrong,
            answered,
            wrong_percent: percent(wrong, answered),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Every student's chosen display name, by id (students without one are absent).
pub fn display_names(
    conn: &Connection,
) -> Result<std::collections::HashMap<String, String>, DbError> {
    let mut statement =
        conn.prepare("SELECT id, display_name FROM students WHERE display_name IS NOT NULL")?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

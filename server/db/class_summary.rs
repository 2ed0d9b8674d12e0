//! What the instructor's cockpit needs beyond best scores: when each student was last
//! active, and which questions were missed, counted per student rather than per
//! attempt (a student who tried five times and missed a question five times is one
//! student who missed it).

use rusqlite::Connection;
use serde::Serialize;

use super::DbError;

/// A student with at least one attempt.
#[derive(Debug, Clone, Serialize)]
pub struct ClassMember {
    /// Student id (never shown: it is the cookie).
    pub student_id: String,
    /// Display name, if chosen.
    pub display_name: Option<String>,
    /// Latest quiz attempt or finished experiment, UTC (ISO 8601).
    pub last_active: String,
}

/// How many students missed one question.
#[derive(Debug, Clone, Serialize)]
pub struct MissedByStudents {
    /// Quiz id.
    pub quiz_id: String,
    /// Question id.
    pub question_id: String,
    /// Students who answered it wrong at least once.
    pub students_missed: u32,
    /// Students who answered it.
    pub students_answered: u32,
    /// Students who have never answered it right.
    pub students_never_right: u32,
    /// The latest wrong answer, UTC (ISO 8601).
    pub last_missed_at: String,
}

/// Every student with at least one attempt, with their last activity.
pub fn members(conn: &Connection) -> Result<Vec<ClassMember>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT s.id, s.display_name,
                MAX((SELECT MAX(submitted_at) FROM attempts WHERE student_id = s.id),
                    COALESCE((SELECT MAX(finished_at) FROM experiment_runs WHERE student_id = s.id), ''))
         FROM students s
         WHERE EXISTS (SELECT 1 FROM attempts WHERE student_id = s.id)",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(ClassMember {
            student_id: r.get(0)?,
            display_name: r.get(1)?,
            last_active: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Questions at least one student missed, with per-student counts (any order: the
/// caller puts them in course order).
pub fn missed_by_students(conn: &Connection) -> Result<Vec<MissedByStudents>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT a.quiz_id, q.question_id,
                COUNT(DISTINCT CASE WHEN q.correct = 0 THEN a.student_id END),
                COUNT(DISTINCT a.student_id),
                COUNT(DISTINCT a.student_id) - COUNT(DISTINCT CASE WHEN q.correct = 1 THEN a.student_id END),
                MAX(CASE WHEN q.correct = 0 THEN a.submitted_at END)
         FROM answers q JOIN attempts a ON a.id = q.attempt_id
         GROUP BY a.quiz_id, q.question_id
         HAVING SUM(1 - q.correct) > 0",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(MissedByStudents {
            quiz_id: r.get(0)?,
            question_id: r.get(1)?,
            students_missed: r.get(2)?,
            students_answered: r.get(3)?,
            students_never_right: r.get(4)?,
            last_missed_at: r.get(5)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

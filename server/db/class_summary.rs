//! What the instructor's cockpit needs beyond best scores: when each student was last
//! active, and which questions were missed, counted per student rather than per
//! attempt (a student who tried five times and missed a question five times is one
//! student who missed it).

use serde::Serialize;

use super::{DbError, Tx};

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

/// Every student with at least one quiz attempt or tuning-lab attempt, with their last
/// activity (by id).
pub fn members(tx: &mut Tx) -> Result<Vec<ClassMember>, DbError> {
    // The later of two ISO times is the greater text; SQLite's two-argument MAX has no
    // PostgreSQL twin (GREATEST), so a CASE picks it on both. A student who has only
    // done labs has no quiz attempt (and perhaps no students row): the ids come from
    // both tables.
    tx.query(
        "SELECT id, display_name, CASE WHEN attempted >= ran THEN attempted ELSE ran END
         FROM (
             SELECT ids.id AS id, s.display_name AS display_name,
                    COALESCE((SELECT MAX(submitted_at) FROM attempts WHERE student_id = ids.id), '') AS attempted,
                    COALESCE((SELECT MAX(finished_at) FROM experiment_runs WHERE student_id = ids.id), '') AS ran
             FROM (SELECT student_id AS id FROM attempts
                   UNION SELECT student_id AS id FROM lab_attempts) ids
             LEFT JOIN students s ON s.id = ids.id
         ) activity
         ORDER BY id",
        crate::params![],
    )?
    .iter()
    .map(|r| {
        Ok(ClassMember {
            student_id: r.get(0)?,
            display_name: r.get(1)?,
            last_active: r.get(2)?,
        })
    })
    .collect()
}

/// Questions at least one student missed, with per-student counts (any order: the
/// caller puts them in course order).
pub fn missed_by_students(tx: &mut Tx) -> Result<Vec<MissedByStudents>, DbError> {
    tx.query(
        "SELECT a.quiz_id, q.question_id,
                COUNT(DISTINCT CASE WHEN q.correct = 0 THEN a.student_id END),
                COUNT(DISTINCT a.student_id),
                COUNT(DISTINCT a.student_id) - COUNT(DISTINCT CASE WHEN q.correct = 1 THEN a.student_id END),
                MAX(CASE WHEN q.correct = 0 THEN a.submitted_at END)
         FROM answers q JOIN attempts a ON a.id = q.attempt_id
         GROUP BY a.quiz_id, q.question_id
         HAVING SUM(1 - q.correct) > 0",
        crate::params![],
    )?
    .iter()
    .map(|r| {
        Ok(MissedByStudents {
            quiz_id: r.get(0)?,
            question_id: r.get(1)?,
            students_missed: r.get(2)?,
            students_answered: r.get(3)?,
            students_never_right: r.get(4)?,
            last_missed_at: r.get(5)?,
        })
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    /// Stores an attempt at `at` with the given `(question, correct)` answers.
    fn attempt(
        tx: &mut Tx,
        student: &str,
        at: &str,
        answers: &[(&str, bool)],
    ) -> Result<(), DbError> {
        crate::db::progress::ensure_student(tx, student)?;
        let id: i64 = tx
            .query_row(
                "INSERT INTO attempts (student_id, quiz_id, correct, total, passed, submitted_at)
                 VALUES (?1, 'quiz', 0, 2, 0, ?2) RETURNING id",
                crate::params![student, at],
            )?
            .get(0)?;
        for (question, correct) in answers {
            tx.execute(
                "INSERT INTO answers (attempt_id, question_id, given, correct) VALUES (?1, ?2, '1', ?3)",
                crate::params![id, question, correct],
            )?;
        }
        Ok(())
    }

    #[test]
    fn misses_are_counted_per_student_and_activity_includes_experiments() {
        for (engine, db, _scratch) in backends() {
            db.run_blocking(|tx| {
                let t = |m: u32| format!("2026-01-01T10:{m:02}:00.000Z");
                attempt(tx, "ann", &t(1), &[("q1", false), ("q2", true)])?;
                attempt(tx, "ann", &t(2), &[("q1", false), ("q2", true)])?;
                attempt(tx, "bob", &t(3), &[("q1", true), ("q2", true)])?;
                attempt(tx, "cy", &t(4), &[("q1", false)])?;
                attempt(tx, "cy", &t(5), &[("q1", true)])?;
                crate::db::progress::ensure_student(tx, "idle")?;
                tx.execute(
                    "INSERT INTO experiment_runs (student_id, experiment, params, backend, device, duration_ms, ok, finished_at)
                     VALUES ('bob', 'timing', '{}', 'cpu', 'CPU', 5, 1, ?1)",
                    crate::params![t(9)],
                )?;
                // Dee has done only a tuning lab: no quiz attempt, no students row.
                crate::db::lab_attempts::record(
                    tx,
                    "dee",
                    &crate::db::lab_attempts::LabAttempt {
                        lab: "stop-waiting",
                        verdict: "pass",
                        score_percent: 100.0,
                        summary: Default::default(),
                    },
                    "cpu",
                )?;
                tx.execute(
                    "INSERT INTO experiment_runs (student_id, experiment, params, backend, device, duration_ms, ok, finished_at)
                     VALUES ('dee', 'lab', '{}', 'cpu', 'CPU', 5, 1, ?1)",
                    crate::params![t(7)],
                )?;
                Ok(())
            })
            .unwrap();
            let members = db.run_blocking(members).unwrap();
            let seen: Vec<_> = members
                .iter()
                .map(|m| (m.student_id.as_str(), m.last_active.as_str()))
                .collect();
            assert_eq!(
                seen,
                vec![
                    ("ann", "2026-01-01T10:02:00.000Z"),
                    ("bob", "2026-01-01T10:09:00.000Z"),
                    ("cy", "2026-01-01T10:05:00.000Z"),
                    ("dee", "2026-01-01T10:07:00.000Z"),
                ],
                "{engine}: the later of quiz and experiment; labs count; no one without an attempt"
            );
            let missed = db.run_blocking(missed_by_students).unwrap();
            assert_eq!(missed.len(), 1, "{engine}: q2 was never missed");
            let q1 = &missed[0];
            assert_eq!(
                (
                    q1.question_id.as_str(),
                    q1.students_missed,
                    q1.students_answered,
                    q1.students_never_right,
                    q1.last_missed_at.as_str()
                ),
                ("q1", 2, 3, 1, "2026-01-01T10:04:00.000Z"),
                "{engine}"
            );
        }
    }
}

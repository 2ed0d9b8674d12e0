//! The instructor's view of the class: best result per student and quiz, and the
//! questions answered wrong most often. Read-only queries over the attempts tables.
//! Students appear under a pseudonym (a keyed hash of their id, with a key kept in this
//! database), never their id: the id is their cookie, and a grade file that carried it
//! would let its reader act as any student.

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use super::progress::percent;
use super::{DbError, Tx};

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
    /// The first attempt, UTC (ISO 8601).
    pub first_attempt_at: String,
    /// The latest attempt, UTC (ISO 8601).
    pub last_attempt_at: String,
}

/// Every student's best result per attempted quiz, by student (display name, students
/// without one last, then id) then quiz.
pub fn grades(tx: &mut Tx) -> Result<Vec<GradeCell>, DbError> {
    // The best attempt's own `correct` and `total` (ranked by their exact ratio; equal
    // ratios round alike), rounded here by the one rule, not re-derived in SQL.
    let mut cells = tx
        .query(
            "SELECT b.student_id, s.display_name, b.quiz_id, b.correct, b.total, b.attempts,
                    b.passed, b.first_at, b.last_at
             FROM (SELECT student_id, quiz_id, correct, total,
                          ROW_NUMBER() OVER (PARTITION BY student_id, quiz_id
                              ORDER BY CASE WHEN total > 0 THEN correct * 1.0 / total ELSE 0 END DESC) AS best_first,
                          COUNT(*) OVER (PARTITION BY student_id, quiz_id) AS attempts,
                          MAX(passed) OVER (PARTITION BY student_id, quiz_id) AS passed,
                          MIN(submitted_at) OVER (PARTITION BY student_id, quiz_id) AS first_at,
                          MAX(submitted_at) OVER (PARTITION BY student_id, quiz_id) AS last_at
                   FROM attempts) b
             JOIN students s ON s.id = b.student_id
             WHERE b.best_first = 1",
            crate::params![],
        )?
        .iter()
        .map(|r| {
            Ok(GradeCell {
                student_id: r.get(0)?,
                display_name: r.get(1)?,
                quiz_id: r.get(2)?,
                best_percent: percent(r.get(3)?, r.get(4)?),
                attempts: r.get(5)?,
                passed: r.get(6)?,
                first_attempt_at: r.get(7)?,
                last_attempt_at: r.get(8)?,
            })
        })
        .collect::<Result<Vec<_>, DbError>>()?;
    // Sorted here, not in SQL: text order in PostgreSQL follows the database's locale,
    // and this is SQLite's byte order (`~` sorts after every ASCII letter).
    cells.sort_by(|a, b| {
        let name = |c: &GradeCell| c.display_name.clone().unwrap_or_else(|| "~".into());
        name(a)
            .cmp(&name(b))
            .then_with(|| a.student_id.cmp(&b.student_id))
            .then_with(|| a.quiz_id.cmp(&b.quiz_id))
    });
    Ok(cells)
}

/// Every student's chosen display name, by id (students without one are absent).
pub fn display_names(tx: &mut Tx) -> Result<std::collections::HashMap<String, String>, DbError> {
    tx.query(
        "SELECT id, display_name FROM students WHERE display_name IS NOT NULL",
        crate::params![],
    )?
    .iter()
    .map(|row| Ok((row.get(0)?, row.get(1)?)))
    .collect()
}

/// This database's key for pseudonyms, created on first use.
pub fn pseudonym_key(tx: &mut Tx) -> Result<String, DbError> {
    let existing = tx.query_opt(
        "SELECT value FROM settings WHERE key = 'pseudonym_key'",
        crate::params![],
    )?;
    if let Some(row) = existing {
        return row.get(0);
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    let key: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    // Another transaction may have created it meanwhile: then theirs is read back.
    tx.execute(
        "INSERT INTO settings (key, value) VALUES ('pseudonym_key', ?1) ON CONFLICT DO NOTHING",
        crate::params![key],
    )?;
    pseudonym_key(tx)
}

/// The student whose pseudonym is `pseudonym` (`s-…`, as the gradebook shows it), if any.
pub fn student_by_pseudonym(tx: &mut Tx, pseudonym: &str) -> Result<Option<String>, DbError> {
    let key = pseudonym_key(tx)?;
    for row in tx.query("SELECT id FROM students", crate::params![])? {
        let id: String = row.get(0)?;
        if self::pseudonym(&key, &id) == pseudonym {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// The name the instructor sees for a student without a display name, and the id in
/// exports: `s-` and 16 hex digits of HMAC-SHA256(key, id). Stable for this database,
/// and useless for acting as the student.
pub fn pseudonym(key: &str, student_id: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("HMAC takes any key");
    mac.update(student_id.as_bytes());
    let digest = mac.finalize().into_bytes();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("s-{hex}")
}

#[cfg(test)]
mod pseudonym_tests {
    use super::*;
    use crate::db::testing::backends;

    #[test]
    fn pseudonyms_are_stable_keyed_and_hide_the_id() {
        for (engine, db, _scratch) in backends() {
            let key = db.run_blocking(pseudonym_key).unwrap();
            assert_eq!(
                db.run_blocking(pseudonym_key).unwrap(),
                key,
                "{engine}: created once"
            );
            let id = "0123456789abcdef0123456789abcdef";
            let name = pseudonym(&key, id);
            assert_eq!(name, pseudonym(&key, id), "{engine}");
            assert_ne!(name, pseudonym("another key", id), "{engine}");
            assert!(
                name.starts_with("s-") && name.len() == 18 && !id.contains(&name[2..]),
                "{engine}"
            );
        }
    }

    #[test]
    fn grades_keep_the_best_score_per_student_and_quiz_named_first() {
        for (engine, db, _scratch) in backends() {
            db.run_blocking(|tx| {
                for (student, name) in [("b", None), ("a", Some("Zoe")), ("c", Some("Amy"))] {
                    crate::db::progress::set_display_name(tx, student, name)?;
                }
                // The best is the best ratio (2 of 3 is below 3 of 4), rounded half up
                // by the one rule (22 of 24 is 91.7).
                for (student, quiz, correct, total, passed) in [
                    ("b", "q1", 1, 4, false),
                    ("b", "q1", 3, 4, true),
                    ("b", "q1", 2, 3, false),
                    ("a", "q2", 2, 4, false),
                    ("a", "q2", 22, 24, true),
                    ("c", "q1", 0, 4, false),
                ] {
                    tx.execute(
                        "INSERT INTO attempts (student_id, quiz_id, correct, total, passed)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        crate::params![student, quiz, correct, total, passed],
                    )?;
                }
                Ok(())
            })
            .unwrap();
            let cells = db.run_blocking(grades).unwrap();
            let seen: Vec<_> = cells
                .iter()
                .map(|c| {
                    (
                        c.student_id.as_str(),
                        c.quiz_id.as_str(),
                        c.best_percent,
                        c.attempts,
                        c.passed,
                    )
                })
                .collect();
            assert_eq!(
                seen,
                vec![
                    ("c", "q1", 0.0, 1, false),
                    ("a", "q2", 91.7, 2, true),
                    ("b", "q1", 75.0, 3, true),
                ],
                "{engine}"
            );
            assert!(
                cells[2].first_attempt_at <= cells[2].last_attempt_at,
                "{engine}"
            );
            let names = db.run_blocking(display_names).unwrap();
            assert_eq!(names.len(), 2, "{engine}");
            assert_eq!(names["a"], "Zoe", "{engine}");
        }
    }
}

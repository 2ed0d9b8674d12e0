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
    let mut cells = tx
        .query(
            "SELECT a.student_id, s.display_name, a.quiz_id,
                    MAX((a.correct * 2000 + a.total) / (2 * a.total)), COUNT(*), MAX(a.passed),
                    MIN(a.submitted_at), MAX(a.submitted_at)
             FROM attempts a JOIN students s ON s.id = a.student_id
             GROUP BY a.student_id, s.display_name, a.quiz_id",
            crate::params![],
        )?
        .iter()
        .map(|r| {
            // Tenths of a percent, rounded half up like every other score.
            let permille: u32 = r.get(3)?;
            Ok(GradeCell {
                student_id: r.get(0)?,
                display_name: r.get(1)?,
                quiz_id: r.get(2)?,
                best_percent: percent(permille, 1000),
                attempts: r.get(4)?,
                passed: r.get(5)?,
                first_attempt_at: r.get(6)?,
                last_attempt_at: r.get(7)?,
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

/// The database's clock to the second, as the pages show it (`2026-11-27T01:02:03Z`).
pub fn clock_text(tx: &mut Tx) -> Result<String, DbError> {
    let now = super::migrations::now(tx);
    tx.query_row(
        &format!("SELECT substr({now}, 1, 19) || 'Z'"),
        crate::params![],
    )?
    .get(0)
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
                for (student, quiz, correct, passed) in [
                    ("b", "q1", 1, false),
                    ("b", "q1", 3, true),
                    ("a", "q2", 2, false),
                    ("c", "q1", 0, false),
                ] {
                    tx.execute(
                        "INSERT INTO attempts (student_id, quiz_id, correct, total, passed)
                         VALUES (?1, ?2, ?3, 4, ?4)",
                        crate::params![student, quiz, correct, passed],
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
                    ("a", "q2", 50.0, 1, false),
                    ("b", "q1", 75.0, 2, true),
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

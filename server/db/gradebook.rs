//! The instructor's view of the class: best result per student and quiz, and the
//! questions answered wrong most often. Read-only queries over the attempts tables.
//! Students appear under a pseudonym (a keyed hash of their id, with a key kept in this
//! database), never their id: the id is their cookie, and a grade file that carried it
//! would let its reader act as any student.

use hmac::{Hmac, Mac};
use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;
use sha2::Sha256;

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
    /// The first attempt, UTC (ISO 8601).
    pub first_attempt_at: String,
    /// The latest attempt, UTC (ISO 8601).
    pub last_attempt_at: String,
}

/// Every student's best result per attempted quiz, by student then quiz.
pub fn grades(conn: &Connection) -> Result<Vec<GradeCell>, DbError> {
    let mut stmt = conn.prepare(
        "SELECT a.student_id, s.display_name, a.quiz_id,
                MAX((a.correct * 2000 + a.total) / (2 * a.total)), COUNT(*), MAX(a.passed),
                MIN(a.submitted_at), MAX(a.submitted_at)
         FROM attempts a JOIN students s ON s.id = a.student_id
         GROUP BY a.student_id, a.quiz_id
         ORDER BY COALESCE(s.display_name, '~'), a.student_id, a.quiz_id",
    )?;
    let rows = stmt.query_map([], |r| {
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

/// This database's key for pseudonyms, created on first use.
pub fn pseudonym_key(conn: &Connection) -> Result<String, DbError> {
    let existing: Option<String> = conn
        .query_row(
            "SELECT value FROM settings WHERE key = 'pseudonym_key'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(key) = existing {
        return Ok(key);
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    let key: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    conn.execute(
        "INSERT OR IGNORE INTO settings (key, value) VALUES ('pseudonym_key', ?1)",
        [&key],
    )?;
    pseudonym_key(conn)
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

    #[test]
    fn pseudonyms_are_stable_keyed_and_hide_the_id() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
            .unwrap();
        let key = pseudonym_key(&conn).unwrap();
        assert_eq!(pseudonym_key(&conn).unwrap(), key, "created once");
        let id = "0123456789abcdef0123456789abcdef";
        let name = pseudonym(&key, id);
        assert_eq!(name, pseudonym(&key, id));
        assert_ne!(name, pseudonym("another key", id));
        assert!(name.starts_with("s-") && name.len() == 18 && !id.contains(&name[2..]));
    }
}

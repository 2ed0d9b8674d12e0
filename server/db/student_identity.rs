//! A student's identity across browsers and in the instructor's hands: resume codes
//! (a short code that, typed into another browser, makes it that student), renaming, and
//! merging two students into one (every attempt and experiment run kept; best scores
//! are computed from attempts on every read, so they follow at once).
//!
//! A resume code is 12 characters of Crockford's base-32 alphabet (60 random bits),
//! shown as `ABCD-EFGH-JKMN`; guessing one is made slow by the web layer's guard.

use rusqlite::{Connection, OptionalExtension, params};

use super::DbError;
use super::progress::ensure_student;

/// Crockford's base 32: no I, L, O or U, so a code read aloud or copied by hand survives.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters in a code, without its dashes.
pub const CODE_CHARS: usize = 12;

/// A fresh random code, without dashes.
fn new_code() -> String {
    let mut bytes = [0u8; CODE_CHARS];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(b & 31)]))
        .collect()
}

/// `ABCDEFGHJKMN` as `ABCD-EFGH-JKMN`.
pub fn display_code(code: &str) -> String {
    code.as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join("-")
}

/// What a person typed, as a stored code: case, spaces and dashes ignored, and the
/// letters Crockford reads as digits (O → 0, I and L → 1) mapped. `None` when it cannot
/// be a code at all.
pub fn normalise_code(typed: &str) -> Option<String> {
    let code: String = typed
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .map(|c| match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            other => other,
        })
        .collect();
    (code.len() == CODE_CHARS && code.bytes().all(|b| ALPHABET.contains(&b))).then_some(code)
}

/// The student's resume code, if one was made.
pub fn resume_code(conn: &Connection, student: &str) -> Result<Option<String>, DbError> {
    Ok(conn
        .query_row(
            "SELECT code FROM resume_codes WHERE student_id = ?1",
            [student],
            |r| r.get(0),
        )
        .optional()?)
}

/// The student's resume code, made now if there is none.
pub fn ensure_resume_code(conn: &mut Connection, student: &str) -> Result<String, DbError> {
    let tx = conn.transaction()?;
    ensure_student(&tx, student)?;
    if let Some(code) = resume_code(&tx, student)? {
        return Ok(code);
    }
    let code = loop {
        let code = new_code();
        let taken = tx.execute(
            "INSERT OR IGNORE INTO resume_codes (code, student_id) VALUES (?1, ?2)",
            params![code, student],
        )? == 0;
        if !taken {
            break code;
        }
    };
    tx.commit()?;
    Ok(code)
}

/// The student a (normalised) code belongs to.
pub fn student_for_code(conn: &Connection, code: &str) -> Result<Option<String>, DbError> {
    Ok(conn
        .query_row(
            "SELECT student_id FROM resume_codes WHERE code = ?1",
            [code],
            |r| r.get(0),
        )
        .optional()?)
}

/// Sets `student`'s display name (the instructor's rename); false when no such student.
pub fn rename(conn: &Connection, student: &str, name: Option<&str>) -> Result<bool, DbError> {
    Ok(conn.execute(
        "UPDATE students SET display_name = ?2 WHERE id = ?1",
        params![student, name],
    )? == 1)
}

/// Moves everything of `from` to `into` and deletes `from`, in one transaction. `into`
/// keeps its name (or takes `from`'s when it has none) and its resume code.
pub fn merge(conn: &mut Connection, from: &str, into: &str) -> Result<(), DbError> {
    let tx = conn.transaction()?;
    tx.execute(
        "UPDATE attempts SET student_id = ?2 WHERE student_id = ?1",
        params![from, into],
    )?;
    tx.execute(
        "UPDATE experiment_runs SET student_id = ?2 WHERE student_id = ?1",
        params![from, into],
    )?;
    tx.execute(
        "UPDATE predictions SET student_id = ?2 WHERE student_id = ?1",
        params![from, into],
    )?;
    // A round both predicted in keeps `into`'s prediction.
    tx.execute(
        "UPDATE OR IGNORE round_predictions SET student_id = ?2 WHERE student_id = ?1",
        params![from, into],
    )?;
    tx.execute(
        "DELETE FROM round_predictions WHERE student_id = ?1",
        [from],
    )?;
    tx.execute(
        "UPDATE students SET display_name = COALESCE(display_name,
             (SELECT display_name FROM students WHERE id = ?1)) WHERE id = ?2",
        params![from, into],
    )?;
    tx.execute("DELETE FROM students WHERE id = ?1", [from])?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_long_enough_and_read_forgivingly() {
        let code = new_code();
        assert_eq!(code.len(), CODE_CHARS);
        assert_ne!(code, new_code());
        let shown = display_code(&code);
        assert_eq!(shown.len(), CODE_CHARS + 2);
        assert_eq!(normalise_code(&shown.to_lowercase()), Some(code));
        assert_eq!(
            normalise_code(" abcd efgh jkmo "),
            Some("ABCDEFGHJKM0".into())
        );
        assert_eq!(normalise_code("ABCD-EFGH-JKM"), None, "too short");
        assert_eq!(
            normalise_code("ABCD-EFGH-JKMU"),
            None,
            "U is not in the alphabet"
        );
        assert_eq!(normalise_code("ÀBCD-EFGH-JKMN"), None);
    }

    #[test]
    fn a_code_is_made_once_and_finds_its_student() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::db::Db::open(&dir.path().join("c.db")).unwrap();
        let student = "b".repeat(32);
        let code = db
            .run_blocking(|conn| ensure_resume_code(conn, &student))
            .unwrap();
        let again = db
            .run_blocking(|conn| ensure_resume_code(conn, &student))
            .unwrap();
        assert_eq!(code, again);
        let found = db
            .run_blocking(|conn| student_for_code(conn, &code))
            .unwrap();
        assert_eq!(found.as_deref(), Some(student.as_str()));
    }
}

//! A student's identity across browsers and in the instructor's hands: resume codes
//! (a short code that, typed into another browser, makes it that student), renaming, and
//! merging two students into one (every attempt and experiment run kept; best scores
//! are computed from attempts on every read, so they follow at once).
//!
//! A resume code is 12 characters of Crockford's base-32 alphabet (60 random bits),
//! shown as `ABCD-EFGH-JKMN`; guessing one is made slow by the web layer's guard.

use super::progress::ensure_student;
use super::{DbError, Tx};

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
pub fn resume_code(tx: &mut Tx, student: &str) -> Result<Option<String>, DbError> {
    tx.query_opt(
        "SELECT code FROM resume_codes WHERE student_id = ?1",
        crate::params![student],
    )?
    .map(|row| row.get(0))
    .transpose()
}

/// The student's resume code, made now if there is none.
pub fn ensure_resume_code(tx: &mut Tx, student: &str) -> Result<String, DbError> {
    ensure_student(tx, student)?;
    loop {
        // Read again after a refused insert: on PostgreSQL another transaction may have
        // just given this student a code (then the insert is refused for the student,
        // not the code, and that code is the one to keep).
        if let Some(code) = resume_code(tx, student)? {
            return Ok(code);
        }
        let code = new_code();
        let stored = tx.execute(
            "INSERT INTO resume_codes (code, student_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            crate::params![code, student],
        )? == 1;
        if stored {
            return Ok(code);
        }
    }
}

/// The student a (normalised) code belongs to.
pub fn student_for_code(tx: &mut Tx, code: &str) -> Result<Option<String>, DbError> {
    tx.query_opt(
        "SELECT student_id FROM resume_codes WHERE code = ?1",
        crate::params![code],
    )?
    .map(|row| row.get(0))
    .transpose()
}

/// Sets `student`'s display name (the instructor's rename); false when no such student.
pub fn rename(tx: &mut Tx, student: &str, name: Option<&str>) -> Result<bool, DbError> {
    Ok(tx.execute(
        "UPDATE students SET display_name = ?2 WHERE id = ?1",
        crate::params![student, name],
    )? == 1)
}

/// Moves everything of `from` to `into` and deletes `from`, in the caller's transaction.
/// `into` keeps its name (or takes `from`'s when it has none) and its resume code.
pub fn merge(tx: &mut Tx, from: &str, into: &str) -> Result<(), DbError> {
    for table in ["attempts", "experiment_runs", "predictions"] {
        tx.execute(
            &format!("UPDATE {table} SET student_id = ?2 WHERE student_id = ?1"),
            crate::params![from, into],
        )?;
    }
    // A round both predicted in keeps `into`'s prediction: `from`'s goes first (what
    // SQLite's `UPDATE OR IGNORE` then `DELETE` did, in words PostgreSQL has too).
    tx.execute(
        "DELETE FROM round_predictions WHERE student_id = ?1
             AND round_id IN (SELECT round_id FROM round_predictions WHERE student_id = ?2)",
        crate::params![from, into],
    )?;
    tx.execute(
        "UPDATE round_predictions SET student_id = ?2 WHERE student_id = ?1",
        crate::params![from, into],
    )?;
    tx.execute(
        "DELETE FROM round_predictions WHERE student_id = ?1",
        crate::params![from],
    )?;
    tx.execute(
        "UPDATE students SET display_name = COALESCE(display_name,
             (SELECT display_name FROM students WHERE id = ?1)) WHERE id = ?2",
        crate::params![from, into],
    )?;
    tx.execute("DELETE FROM students WHERE id = ?1", crate::params![from])?;
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
        for (engine, db, _scratch) in crate::db::testing::backends() {
            let student = "b".repeat(32);
            let code = db
                .run_blocking(|tx| ensure_resume_code(tx, &student))
                .unwrap();
            let again = db
                .run_blocking(|tx| ensure_resume_code(tx, &student))
                .unwrap();
            assert_eq!(code, again, "{engine}");
            let found = db.run_blocking(|tx| student_for_code(tx, &code)).unwrap();
            assert_eq!(found.as_deref(), Some(student.as_str()), "{engine}");
            assert_eq!(
                db.run_blocking(|tx| student_for_code(tx, "0000")).unwrap(),
                None,
                "{engine}"
            );
        }
    }

    #[test]
    fn merging_moves_everything_and_keeps_the_targets_round_prediction() {
        for (engine, db, _scratch) in crate::db::testing::backends() {
            db.run_blocking(|tx| {
                crate::db::progress::set_display_name(tx, "from", Some("Old name"))?;
                ensure_student(tx, "into")?;
                ensure_resume_code(tx, "into")?;
                for student in ["from", "into"] {
                    tx.execute(
                        "INSERT INTO attempts (student_id, quiz_id, correct, total, passed)
                         VALUES (?1, 'q', 1, 2, 0)",
                        crate::params![student],
                    )?;
                }
                let both = crate::db::rounds::open(tx, "timing", "t", "×", "{}")?;
                let only_from = crate::db::rounds::open(tx, "timing", "t", "×", "{}")?;
                crate::db::rounds::predict(tx, both, "from", 1.0)?;
                crate::db::rounds::predict(tx, both, "into", 2.0)?;
                crate::db::rounds::predict(tx, only_from, "from", 3.0)?;
                Ok(())
            })
            .unwrap();
            db.run_blocking(|tx| merge(tx, "from", "into")).unwrap();
            let (students, attempts, predictions, name) = db
                .run_blocking(|tx| {
                    let count = |tx: &mut Tx, sql: &str| -> Result<i64, DbError> {
                        tx.query_row(sql, crate::params![])?.get(0)
                    };
                    let students = count(tx, "SELECT COUNT(*) FROM students")?;
                    let attempts = count(
                        tx,
                        "SELECT COUNT(*) FROM attempts WHERE student_id = 'into'",
                    )?;
                    let predictions: Vec<(i64, f64)> = tx
                        .query(
                            "SELECT round_id, predicted FROM round_predictions
                             WHERE student_id = 'into' ORDER BY round_id",
                            crate::params![],
                        )?
                        .iter()
                        .map(|r| Ok((r.get(0)?, r.get(1)?)))
                        .collect::<Result<_, DbError>>()?;
                    let name = crate::db::progress::display_name(tx, "into")?;
                    Ok((students, attempts, predictions, name))
                })
                .unwrap();
            assert_eq!(students, 1, "{engine}: `from` is gone");
            assert_eq!(attempts, 2, "{engine}");
            assert_eq!(
                predictions.iter().map(|p| p.1).collect::<Vec<_>>(),
                vec![2.0, 3.0],
                "{engine}: `into` keeps its own prediction where both predicted"
            );
            assert_eq!(name.as_deref(), Some("Old name"), "{engine}");
            assert!(
                db.run_blocking(|tx| resume_code(tx, "into"))
                    .unwrap()
                    .is_some()
            );
        }
    }
}

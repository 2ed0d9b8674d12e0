//! Instructor sign-ins, in the database in both modes, so every web node of a class
//! knows them (and a one-box server the same way). Only a session's SHA-256 is stored:
//! reading the table signs no one in. A sign-in lasts [`SESSION_SECS`].

use super::clock::epoch_now as now;
use super::{DbError, Tx};
use crate::params;

/// How long an instructor sign-in lasts (the cookie's one day).
pub const SESSION_SECS: f64 = 24.0 * 3600.0;

/// Records the session whose SHA-256 is `key`, and forgets expired ones.
pub fn sign_in(tx: &mut Tx, key: &str) -> Result<(), DbError> {
    let now = now(tx.dialect());
    tx.execute(
        &format!("DELETE FROM instructor_sessions WHERE created_at < {now} - ?1"),
        params![SESSION_SECS],
    )?;
    tx.execute(
        &format!("INSERT INTO instructor_sessions (id, created_at) VALUES (?1, {now})"),
        params![key],
    )?;
    Ok(())
}

/// Ends the session whose SHA-256 is `key`.
pub fn sign_out(tx: &mut Tx, key: &str) -> Result<(), DbError> {
    tx.execute(
        "DELETE FROM instructor_sessions WHERE id = ?1",
        params![key],
    )?;
    Ok(())
}

/// Whether the session whose SHA-256 is `key` signed in within [`SESSION_SECS`].
pub fn is_signed_in(tx: &mut Tx, key: &str) -> Result<bool, DbError> {
    let now = now(tx.dialect());
    Ok(tx
        .query_opt(
            &format!("SELECT 1 FROM instructor_sessions WHERE id = ?1 AND created_at > {now} - ?2"),
            params![key, SESSION_SECS],
        )?
        .is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    #[test]
    fn a_session_is_known_until_it_signs_out() {
        for (engine, db, _scratch) in backends() {
            assert!(
                !db.run_blocking(|tx| is_signed_in(tx, "k1")).unwrap(),
                "{engine}"
            );
            db.run_blocking(|tx| sign_in(tx, "k1")).unwrap();
            assert!(
                db.run_blocking(|tx| is_signed_in(tx, "k1")).unwrap(),
                "{engine}"
            );
            assert!(
                !db.run_blocking(|tx| is_signed_in(tx, "k2")).unwrap(),
                "{engine}"
            );
            db.run_blocking(|tx| sign_out(tx, "k1")).unwrap();
            assert!(
                !db.run_blocking(|tx| is_signed_in(tx, "k1")).unwrap(),
                "{engine}"
            );
        }
    }
}

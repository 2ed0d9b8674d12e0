//! Learners' own GPU runs (`course::learner_runs`), stored per student: each is one
//! learner's measurement of a GPU elsewhere, shown to that learner only — in a class,
//! one student's upload is not the class's GPU, nor anyone else's — and never mixed
//! with the course's recordings, which live in `content/reference-runs/`. A student
//! keeps at most a few ([`add`] refuses past the cap in the same statement that
//! inserts), the same run (device and date) once; resetting one's progress removes them.

use super::clock::text_now as now;
use super::{DbError, Tx};
use crate::params;

/// One stored run, as the learner's pages read it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    /// Its id (for removing it).
    pub id: i64,
    /// When it was uploaded (ISO-8601 text).
    pub imported_at: String,
    /// The reference file (JSON) that `course::learner_runs::check_upload` made of it.
    pub file_json: String,
}

/// What [`add`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// Stored, with the id and upload time the database gave it.
    Stored {
        /// Its id.
        id: i64,
        /// When it was uploaded (ISO-8601 text).
        imported_at: String,
    },
    /// The student already has this run (same device and date).
    Duplicate,
    /// The student already keeps `cap` runs.
    Full,
}

/// Stores `file_json`, the run of `device` made at `recorded_at_unix`, for `student`,
/// unless they have it already or keep `cap` runs.
pub fn add(
    tx: &mut Tx,
    student: &str,
    device: &str,
    recorded_at_unix: u64,
    file_json: &str,
    cap: i64,
) -> Result<Added, DbError> {
    let at = i64::try_from(recorded_at_unix).unwrap_or(i64::MAX);
    // The casts give PostgreSQL the parameters' types, which a SELECT list alone does not.
    let duplicate = tx.query_opt(
        "SELECT id FROM learner_gpu_runs WHERE student_id = ?1 AND device = ?2 AND recorded_at_unix = ?3",
        params![student, device, at],
    )?;
    if duplicate.is_some() {
        return Ok(Added::Duplicate);
    }
    let now = now(tx);
    let inserted = tx.query_opt(
        &format!(
            "INSERT INTO learner_gpu_runs (student_id, device, recorded_at_unix, imported_at, run)
             SELECT CAST(?1 AS TEXT), CAST(?2 AS TEXT), CAST(?3 AS BIGINT), {now}, CAST(?4 AS TEXT)
             WHERE (SELECT COUNT(*) FROM learner_gpu_runs WHERE student_id = ?1) < ?5
             RETURNING id, imported_at"
        ),
        params![student, device, at, file_json, cap],
    )?;
    Ok(match inserted {
        Some(row) => Added::Stored {
            id: row.get(0)?,
            imported_at: row.get(1)?,
        },
        None => Added::Full,
    })
}

/// `student`'s runs, oldest first.
pub fn list(tx: &mut Tx, student: &str) -> Result<Vec<StoredRun>, DbError> {
    tx.query(
        "SELECT id, imported_at, run FROM learner_gpu_runs WHERE student_id = ?1 ORDER BY id",
        params![student],
    )?
    .iter()
    .map(|row| {
        Ok(StoredRun {
            id: row.get(0)?,
            imported_at: row.get(1)?,
            file_json: row.get(2)?,
        })
    })
    .collect()
}

/// Removes `student`'s run `id`; whether there was one (another student's is not theirs).
pub fn remove(tx: &mut Tx, student: &str, id: i64) -> Result<bool, DbError> {
    Ok(tx.execute(
        "DELETE FROM learner_gpu_runs WHERE student_id = ?1 AND id = ?2",
        params![student, id],
    )? == 1)
}

/// Removes every run of `student` (their progress reset).
pub fn remove_all(tx: &mut Tx, student: &str) -> Result<(), DbError> {
    tx.execute(
        "DELETE FROM learner_gpu_runs WHERE student_id = ?1",
        params![student],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    #[test]
    fn runs_are_kept_per_student_capped_once_each_and_removed_only_by_their_owner() {
        for (engine, db, _scratch) in backends() {
            eprintln!("{engine}");
            let add_run = |student: &'static str, at: u64| {
                db.run_blocking(move |tx| add(tx, student, "Tesla T4", at, "{\"n\":1}", 2))
                    .unwrap()
            };
            let stored = |added: Added| match added {
                Added::Stored { id, imported_at } => (id, imported_at),
                other => panic!("{engine}: not stored: {other:?}"),
            };
            let first_added = stored(add_run("ada", 1_790_000_000));
            assert_eq!(add_run("ada", 1_790_000_000), Added::Duplicate);
            let second_added = stored(add_run("ada", 1_790_000_001));
            assert_eq!(add_run("ada", 1_790_000_002), Added::Full);
            stored(add_run("bob", 1_790_000_000));
            let ada = db.run_blocking(|tx| list(tx, "ada")).unwrap();
            assert_eq!(ada.len(), 2);
            // What add returned is what the list reads back.
            assert_eq!(first_added, (ada[0].id, ada[0].imported_at.clone()));
            assert_eq!(second_added, (ada[1].id, ada[1].imported_at.clone()));
            assert!(ada[0].id < ada[1].id && ada[0].file_json == "{\"n\":1}");
            assert!(ada[0].imported_at.contains('T'), "{}", ada[0].imported_at);
            let (first, bobs) = (
                ada[0].id,
                db.run_blocking(|tx| list(tx, "bob")).unwrap()[0].id,
            );
            assert!(!db.run_blocking(move |tx| remove(tx, "ada", bobs)).unwrap());
            assert!(db.run_blocking(move |tx| remove(tx, "ada", first)).unwrap());
            stored(add_run("ada", 1_790_000_002));
            db.run_blocking(|tx| remove_all(tx, "ada")).unwrap();
            assert!(db.run_blocking(|tx| list(tx, "ada")).unwrap().is_empty());
            assert_eq!(db.run_blocking(|tx| list(tx, "bob")).unwrap().len(), 1);
        }
    }
}

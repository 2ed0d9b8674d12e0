//! The SQLite database: one file (WAL mode, `synchronous = FULL`), created and migrated
//! on start-up. It holds students, quiz attempts and per-question answers; nothing is
//! acknowledged to a student before its transaction has committed.
//!
//! SQLite calls block, so every query runs on tokio's blocking pool through [`Db::run`];
//! one connection behind a mutex serialises writers, which is what SQLite does anyway.

pub mod class_summary;
pub mod experiment_history;
pub mod gradebook;
pub mod predictions;
pub mod progress;
pub mod rounds;
pub mod student_identity;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

/// The database layer's errors.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// SQLite refused or failed.
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The blocking task running a query panicked or was cancelled.
    #[error("database task failed: {0}")]
    Task(String),
    /// The connection mutex was poisoned by an earlier panic.
    #[error("database connection is unusable after an earlier failure")]
    Poisoned,
}

/// A cloneable handle to the database.
#[derive(Clone)]
pub struct Db {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
}

/// Schema migrations, applied in order; `PRAGMA user_version` records how many ran.
/// Never edit one that has shipped: append a new one.
const MIGRATIONS: &[&str] = &[
    r"
CREATE TABLE students (
    id           TEXT PRIMARY KEY,
    display_name TEXT,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE attempts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    student_id   TEXT NOT NULL REFERENCES students(id) ON DELETE CASCADE,
    quiz_id      TEXT NOT NULL,
    correct      INTEGER NOT NULL,
    total        INTEGER NOT NULL,
    passed       INTEGER NOT NULL,
    submitted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX attempts_by_student ON attempts(student_id, quiz_id);
CREATE TABLE answers (
    attempt_id  INTEGER NOT NULL REFERENCES attempts(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    given       TEXT NOT NULL,
    correct     INTEGER NOT NULL,
    PRIMARY KEY (attempt_id, question_id)
);
",
    r"
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
",
    // The instructor cockpit: resume codes (one per student, for another browser) and
    // the history of finished experiments (kept across restarts).
    r"
CREATE TABLE resume_codes (
    code       TEXT PRIMARY KEY,
    student_id TEXT NOT NULL UNIQUE REFERENCES students(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE experiment_runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    student_id  TEXT NOT NULL,
    experiment  TEXT NOT NULL,
    params      TEXT NOT NULL,
    backend     TEXT NOT NULL,
    device      TEXT NOT NULL,
    duration_ms INTEGER NOT NULL,
    ok          INTEGER NOT NULL,
    error       TEXT,
    finished_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX experiment_runs_by_student ON experiment_runs(student_id);
CREATE INDEX attempts_by_time ON attempts(student_id, submitted_at);
",
    // Predict, then measure: each prediction with the measurement it was scored against.
    r"
CREATE TABLE predictions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    student_id  TEXT NOT NULL,
    experiment  TEXT NOT NULL,
    quantity    TEXT NOT NULL,
    params      TEXT NOT NULL,
    predicted   REAL NOT NULL,
    measured    REAL NOT NULL,
    unit        TEXT NOT NULL,
    backend     TEXT NOT NULL,
    device      TEXT NOT NULL,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX predictions_by_student ON predictions(student_id);
CREATE INDEX predictions_by_quantity ON predictions(quantity);
",
    // Class rounds: one experiment the whole class predicts, run once and revealed together.
    r"
CREATE TABLE rounds (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    experiment  TEXT NOT NULL,
    quantity    TEXT NOT NULL,
    params      TEXT NOT NULL,
    measured    REAL,
    backend     TEXT,
    device      TEXT,
    opened_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    revealed_at TEXT
);
CREATE TABLE round_predictions (
    round_id   INTEGER NOT NULL REFERENCES rounds(id) ON DELETE CASCADE,
    student_id TEXT NOT NULL,
    predicted  REAL NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (round_id, student_id)
);
",
];

impl Db {
    /// Opens (creating if needed) and migrates the database at `path`.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            // A missing folder would make SQLite fail with a vague "unable to open";
            // creating it is what a user pointing at a fresh volume expects.
            let _ = std::fs::create_dir_all(parent);
        }
        let mut conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        migrate(&mut conn)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            path: path.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` with the connection on the blocking pool.
    pub async fn run<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, DbError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut guard = conn.lock().map_err(|_| DbError::Poisoned)?;
            f(&mut guard)
        })
        .await
        .map_err(|e| DbError::Task(e.to_string()))?
    }

    /// Runs `f` with the connection on the calling thread (for threads outside tokio,
    /// such as the experiment workers recording a finished run).
    pub fn run_blocking<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let mut guard = self.conn.lock().map_err(|_| DbError::Poisoned)?;
        f(&mut guard)
    }

    /// Copies the write-ahead log into the database file and truncates it (shutdown), so
    /// the `.db` file alone holds every committed attempt.
    pub async fn checkpoint(&self) -> Result<(), DbError> {
        self.run(|conn| {
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
            Ok(())
        })
        .await
    }

    /// Checks the database accepts a write (for readiness probes).
    pub async fn check_writable(&self) -> Result<(), DbError> {
        self.run(|conn| {
            conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;")?;
            Ok(())
        })
        .await
    }
}

fn migrate(conn: &mut Connection) -> Result<(), DbError> {
    let applied: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let applied = usize::try_from(applied).unwrap_or(0);
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
        tx.commit()?;
        tracing::info!("database migrated to version {}", i + 1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_in_wal_mode_and_migrates_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/gpulab.db");
        let db = Db::open(&path).unwrap();
        let conn = db.conn.lock().unwrap();
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        drop(conn);
        drop(db);
        Db::open(&path).expect("re-opening an up-to-date database does not re-run migrations");
    }
}

//! `gpulab db backup` and `gpulab db restore`: a consistent copy of the SQLite gradebook
//! while the class runs, and putting one back. Copying `gpulab.db` with `cp` while the
//! server writes can tear it (a WAL database's committed pages live partly in
//! `gpulab.db-wal` until a checkpoint), so the backup is SQLite's `VACUUM INTO`: one read
//! transaction — a snapshot that sees every commit before it began and none after, taken
//! beside the running server's writes without stopping them. The copy is then opened and
//! checked (`PRAGMA integrity_check`, the schema version, every table's row count)
//! before it is reported. A restore refuses while a server has the database open, and
//! keeps the database it replaces beside it. PostgreSQL's equivalent is `pg_dump`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::{DbError, MIGRATIONS};

/// Every table a backup holds, counted in its report: the class's data and the queue's.
pub const TABLES: &[&str] = &[
    "students",
    "attempts",
    "answers",
    "settings",
    "resume_codes",
    "experiment_runs",
    "predictions",
    "rounds",
    "round_predictions",
];

/// What a checked copy holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupReport {
    /// The file written (or restored from).
    pub path: PathBuf,
    /// Its size in bytes.
    pub bytes: u64,
    /// `PRAGMA integrity_check`'s answer (`ok`).
    pub integrity: String,
    /// The schema version (migrations applied).
    pub schema_version: i64,
    /// Rows per table.
    pub counts: Vec<(&'static str, i64)>,
}

impl std::fmt::Display for BackupReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{}: {} bytes, integrity {}, schema version {}",
            self.path.display(),
            self.bytes,
            self.integrity,
            self.schema_version
        )?;
        writeln!(f, "{:<20} {:>10}", "table", "rows")?;
        for (table, count) in &self.counts {
            writeln!(f, "{table:<20} {count:>10}")?;
        }
        Ok(())
    }
}

/// Why a backup or restore did not happen.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// SQLite failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A file could not be read, written or moved.
    #[error("{0}")]
    Io(String),
    /// The file named is not there (or not a SQLite database of this server).
    #[error("{0}")]
    Missing(String),
    /// A backup must not overwrite anything.
    #[error("{0} already exists: name a new file, a backup never overwrites one")]
    Exists(PathBuf),
    /// The copy failed its check (and was removed, for a backup).
    #[error("the copy at {path} failed its check: {why}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What the check said.
        why: String,
    },
    /// A server has the database open.
    #[error(
        "{0} is in use by a running server: stop it (gpulab serve) first; a restore never overwrites a live database"
    )]
    InUse(PathBuf),
}

fn sqlite(e: rusqlite::Error) -> BackupError {
    BackupError::Db(DbError::Sqlite(e))
}

/// Opens an existing database file without creating it or migrating it.
fn open_existing(path: &Path) -> Result<Connection, BackupError> {
    if !path.is_file() {
        return Err(BackupError::Missing(format!(
            "{} is not a file: name the SQLite database (gpulab serve --database)",
            path.display()
        )));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite)?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(sqlite)?;
    Ok(conn)
}

/// Writes a consistent copy of the database at `source` to `to` (a new file), while a
/// server may be writing to it, and checks the copy.
pub fn backup(source: &Path, to: &Path) -> Result<BackupReport, BackupError> {
    if to.exists() {
        return Err(BackupError::Exists(to.to_path_buf()));
    }
    let conn = open_existing(source)?;
    let target = to
        .to_str()
        .ok_or_else(|| BackupError::Io(format!("{} is not a UTF-8 path", to.display())))?;
    conn.execute("VACUUM INTO ?1", [target]).map_err(sqlite)?;
    drop(conn);
    check(to).inspect_err(|_| {
        let _ = std::fs::remove_file(to);
    })
}

/// Opens the copy at `path` and checks it: integrity, the schema, the row counts.
pub fn check(path: &Path) -> Result<BackupReport, BackupError> {
    let conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(sqlite)?;
    let damaged = |why: String| BackupError::Damaged {
        path: path.to_path_buf(),
        why,
    };
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .map_err(|e| damaged(e.to_string()))?;
    if integrity != "ok" {
        return Err(damaged(integrity));
    }
    let schema_version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(sqlite)?;
    if schema_version < 1 || schema_version > MIGRATIONS.len() as i64 {
        return Err(damaged(format!(
            "schema version {schema_version} is not one of this server's (1 to {})",
            MIGRATIONS.len()
        )));
    }
    let mut counts = Vec::new();
    for table in TABLES {
        // A backup of an older schema may lack a newer table.
        let present: bool = conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |row| row.get(0),
            )
            .map_err(sqlite)?;
        if present {
            let count: i64 = conn
                .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| {
                    row.get(0)
                })
                .map_err(|e| damaged(e.to_string()))?;
            counts.push((*table, count));
        }
    }
    let bytes = std::fs::metadata(path)
        .map_err(|e| BackupError::Io(format!("{}: {e}", path.display())))?
        .len();
    Ok(BackupReport {
        path: path.to_path_buf(),
        bytes,
        integrity,
        schema_version,
        counts,
    })
}

/// Whether a connection elsewhere (a running server) has the database at `path` open:
/// every connection to a WAL database holds a shared lock on the file while it is open,
/// so an exclusive lock cannot be had.
fn in_use(path: &Path) -> Result<bool, BackupError> {
    let conn = open_existing(path)?;
    conn.busy_timeout(Duration::ZERO).map_err(sqlite)?;
    conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
        .map_err(sqlite)?;
    match conn.execute_batch("BEGIN EXCLUSIVE; COMMIT;") {
        Ok(()) => {
            // Nobody else: fold its write-ahead log into the file before it moves.
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
                .map_err(sqlite)?;
            Ok(false)
        }
        Err(rusqlite::Error::SqliteFailure(e, _))
            if matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ) =>
        {
            Ok(true)
        }
        Err(e) => Err(sqlite(e)),
    }
}

/// Puts the backup at `from` in place as the database at `to`, after checking it. A
/// database already at `to` must not be in use; it is kept beside, renamed
/// `<to>.replaced-<seconds since the epoch>`, and that name is returned.
pub fn restore(from: &Path, to: &Path) -> Result<(BackupReport, Option<PathBuf>), BackupError> {
    let report = check(from)?;
    let io = |what: &str, e: std::io::Error| BackupError::Io(format!("{what}: {e}"));
    let mut kept = None;
    if to.exists() {
        if in_use(to)? {
            return Err(BackupError::InUse(to.to_path_buf()));
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let aside = PathBuf::from(format!("{}.replaced-{stamp}", to.display()));
        std::fs::rename(to, &aside).map_err(|e| io("moving the old database aside", e))?;
        kept = Some(aside);
    }
    // A log left by the old database must not be replayed into the restored one.
    for suffix in ["-wal", "-shm"] {
        let stale = PathBuf::from(format!("{}{suffix}", to.display()));
        if stale.exists() {
            std::fs::remove_file(&stale).map_err(|e| io("removing the old log", e))?;
        }
    }
    let partial = PathBuf::from(format!("{}.restoring", to.display()));
    std::fs::copy(from, &partial).map_err(|e| io("copying the backup", e))?;
    std::fs::File::open(&partial)
        .and_then(|f| f.sync_all())
        .map_err(|e| io("syncing the copy", e))?;
    std::fs::rename(&partial, to).map_err(|e| io("putting the copy in place", e))?;
    let restored = check(to)?;
    debug_assert_eq!(restored.counts, report.counts);
    Ok((restored, kept))
}

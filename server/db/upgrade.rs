//! An upgrade keeps every grade: before a SQLite file written by an older GPU Lab is
//! migrated to this binary's schema, a checked copy of it at its old version is written
//! beside it (`gpulab db backup`'s own `VACUUM INTO` and check), and the log says where.
//! If that copy cannot be written, nothing is migrated. A fresh file (version 0) and an
//! up-to-date one need no copy; a file a newer binary wrote is refused before it is read.
//! PostgreSQL's equivalent is the instructor's `pg_dump` before an upgrade: its
//! migrations run in one transaction, so a failed one leaves the old schema whole.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::{DbError, MIGRATIONS, backup, migrations};

/// Writes the copy when the SQLite file at `path` (open as `conn`) is about to be
/// migrated; where it went, or `None` when no migration is due.
pub(super) fn backup_before_migrating(
    path: &Path,
    conn: &Connection,
) -> Result<Option<PathBuf>, DbError> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let applied = migrations::known_version(version)?;
    if applied == 0 || applied == MIGRATIONS.len() {
        return Ok(None);
    }
    let to = backup_path(path, applied);
    let report = backup::backup(path, &to).map_err(|why| {
        DbError::UpgradeBackup(format!(
            "{} is at schema version {applied}, which this gpulab migrates to version {}; the copy it writes first could not be made at {} ({why}), so nothing was migrated. Free some space beside the database, or take a backup yourself (gpulab db backup) and try again",
            path.display(),
            MIGRATIONS.len(),
            to.display()
        ))
    })?;
    tracing::warn!(
        backup = %report.path.display(),
        bytes = report.bytes,
        from_version = applied,
        to_version = MIGRATIONS.len(),
        "migrating the database to this version's schema; its copy at the old version is kept beside it (gpulab db restore puts it back)"
    );
    Ok(Some(report.path))
}

/// `gpulab.db` at version 11 → `gpulab.db.v11-backup-<seconds since the epoch>`.
fn backup_path(path: &Path, applied: usize) -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(format!("{}.v{applied}-backup-{stamp}", path.display()))
}

#[cfg(test)]
#[path = "upgrade_fixtures.rs"]
mod fixtures;

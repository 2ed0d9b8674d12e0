//! Whether the database takes writes. A full disk (SQLite's `SQLITE_FULL`, PostgreSQL's
//! "could not extend file", SQLSTATE `53100`), a read-only file or server, or a SQLite
//! file removed or replaced under the running server is not a bug but a state the box is
//! in: every write fails alike until an operator acts. So the failure is named
//! ([`Unwritable`]), the web layer answers it with a 503 that says nothing was saved,
//! and [`Health`] keeps the state — set by any failing write and by a probe that writes
//! to the one-row `health` table at most once a second — so `/readyz` and `/metrics`
//! report it, the queue and the playground refuse new work while it lasts, and the log
//! says so once per change of state rather than once per request. The probe also finds
//! the way back: when space returns (or the file is writable, or back), the next probe
//! succeeds and the state clears by itself.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::DbError;

/// The least time between two probes: readiness checks and submissions read the last
/// result in between.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// What a `Retry-After` says while the database cannot take writes: an operator must
/// free space or fix the file, which takes a while.
pub const RETRY_AFTER_SECS: u64 = 30;

/// Why the database cannot take a write now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwritable {
    /// The disk (or volume) holding the database is full.
    DiskFull,
    /// The database file, its folder or the server is read-only.
    ReadOnly,
    /// The SQLite file was removed (or replaced) under the running server: writes would
    /// go to a deleted file and be lost, so they are refused.
    FileGone,
}

impl Unwritable {
    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Self::DiskFull => "disk_full",
            Self::ReadOnly => "read_only",
            Self::FileGone => "file_gone",
        }
    }

    /// Every state, for metrics.
    pub const ALL: [Self; 3] = [Self::DiskFull, Self::ReadOnly, Self::FileGone];

    /// What is wrong, for operators (logs, `/readyz`).
    pub fn describe(self) -> &'static str {
        match self {
            Self::DiskFull => "out of disk space",
            Self::ReadOnly => "the database is read-only",
            Self::FileGone => "the database file was removed or replaced under the server",
        }
    }

    /// What a student is told: what happened to what they sent.
    pub fn for_students(self) -> &'static str {
        match self {
            Self::DiskFull => {
                "The server is out of disk space, so nothing you sent was saved. Reading the course still works; try again in a few minutes, once the instructor has freed some space."
            }
            Self::ReadOnly => {
                "The server's database is read-only just now, so nothing you sent was saved. Reading the course still works; try again in a few minutes."
            }
            Self::FileGone => {
                "The server's database file is missing just now, so nothing you sent was saved. Reading the course still works; try again in a few minutes."
            }
        }
    }
}

impl std::fmt::Display for Unwritable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// SQLite's primary result code in `error`, if it is one.
fn sqlite_code(error: &rusqlite::Error) -> Option<rusqlite::ErrorCode> {
    match error {
        rusqlite::Error::SqliteFailure(e, _) => Some(e.code),
        _ => None,
    }
}

/// Whether `error` says the database cannot take writes, and why.
pub fn classify(error: &DbError) -> Option<Unwritable> {
    match error {
        DbError::NotWritable(kind) => Some(*kind),
        DbError::Sqlite(e) => match sqlite_code(e)? {
            rusqlite::ErrorCode::DiskFull => Some(Unwritable::DiskFull),
            rusqlite::ErrorCode::ReadOnly => Some(Unwritable::ReadOnly),
            _ => None,
        },
        DbError::Postgres(e) => postgres_state(e.as_db_error()?.code().code()),
        _ => None,
    }
}

/// The PostgreSQL SQLSTATEs that mean "cannot write now": `53100` disk_full (also what
/// "could not extend file" carries) and `25006` read_only_sql_transaction (a standby,
/// or `default_transaction_read_only`).
pub fn postgres_state(code: &str) -> Option<Unwritable> {
    match code {
        "53100" => Some(Unwritable::DiskFull),
        "25006" => Some(Unwritable::ReadOnly),
        _ => None,
    }
}

/// The database's writability as last seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writability {
    /// `None` while writes succeed.
    pub unwritable: Option<Unwritable>,
    /// The last probe's error, when it failed for another reason (the server down).
    pub other: Option<String>,
}

impl Writability {
    /// Whether the last look found the database taking writes.
    pub fn ok(&self) -> bool {
        self.unwritable.is_none() && self.other.is_none()
    }

    /// For `/readyz`: `ok`, or what is wrong.
    pub fn describe(&self) -> String {
        match (&self.unwritable, &self.other) {
            (Some(kind), _) => format!("not writable: {kind}"),
            (None, Some(other)) => format!("not writable: {other}"),
            (None, None) => "ok".into(),
        }
    }
}

/// The state, shared by every clone of a [`super::Db`].
#[derive(Debug)]
pub struct Health {
    current: Mutex<(Writability, Option<Instant>)>,
    probing: AtomicBool,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            current: Mutex::new((
                Writability {
                    unwritable: None,
                    other: None,
                },
                None,
            )),
            probing: AtomicBool::new(false),
        }
    }
}

impl Health {
    /// The state as last seen (no probe).
    pub fn current(&self) -> Writability {
        self.lock().0.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Writability, Option<Instant>)> {
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A write (or the probe) failed with `error`: if it says the database cannot take
    /// writes, that is the state now (logged when it changes).
    pub fn failed(&self, error: &DbError) {
        if let Some(kind) = classify(error) {
            self.set(Writability {
                unwritable: Some(kind),
                other: None,
            });
        }
    }

    /// Records a probe's outcome as the state now.
    pub fn probed(&self, outcome: &Result<(), DbError>) {
        let seen = match outcome {
            Ok(()) => Writability {
                unwritable: None,
                other: None,
            },
            Err(error) => match classify(error) {
                Some(kind) => Writability {
                    unwritable: Some(kind),
                    other: None,
                },
                None => Writability {
                    unwritable: None,
                    other: Some(error.to_string()),
                },
            },
        };
        let mut current = self.lock();
        current.1 = Some(Instant::now());
        drop(current);
        self.set(seen);
    }

    fn set(&self, seen: Writability) {
        let mut current = self.lock();
        if current.0 == seen {
            return;
        }
        let before = std::mem::replace(&mut current.0, seen.clone());
        drop(current);
        match (&before.unwritable, &seen.unwritable) {
            (_, Some(kind)) => tracing::error!(
                state = kind.label(),
                "the database stopped taking writes: {kind}; every write is answered 503 (nothing is saved) until this is fixed, and reading keeps working"
            ),
            (Some(kind), None) if seen.ok() => {
                tracing::warn!(was = kind.label(), "the database takes writes again")
            }
            _ => {}
        }
    }

    /// Whether a probe is due (none in the last [`PROBE_INTERVAL`] and none running);
    /// if so, the caller runs it and must call [`Health::probed`] then
    /// [`Health::done_probing`].
    pub fn start_probe(&self) -> bool {
        let due = self
            .lock()
            .1
            .is_none_or(|at| at.elapsed() >= PROBE_INTERVAL);
        due && !self.probing.swap(true, Ordering::AcqRel)
    }

    /// The probe started by [`Health::start_probe`] is over.
    pub fn done_probing(&self) {
        self.probing.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite_error(code: i32) -> DbError {
        DbError::Sqlite(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(code),
            None,
        ))
    }

    #[test]
    fn storage_errors_are_named_and_others_are_not() {
        assert_eq!(
            classify(&sqlite_error(rusqlite::ffi::SQLITE_FULL)),
            Some(Unwritable::DiskFull)
        );
        assert_eq!(
            classify(&sqlite_error(rusqlite::ffi::SQLITE_READONLY)),
            Some(Unwritable::ReadOnly)
        );
        assert_eq!(
            classify(&sqlite_error(rusqlite::ffi::SQLITE_CONSTRAINT)),
            None
        );
        assert_eq!(postgres_state("53100"), Some(Unwritable::DiskFull));
        assert_eq!(postgres_state("25006"), Some(Unwritable::ReadOnly));
        assert_eq!(
            postgres_state("23505"),
            None,
            "a unique violation is the request's fault"
        );
        assert_eq!(
            classify(&DbError::NotWritable(Unwritable::FileGone)),
            Some(Unwritable::FileGone)
        );
    }

    #[test]
    fn the_state_follows_failures_and_probes_and_probes_are_spaced() {
        let health = Health::default();
        assert!(health.current().ok());
        health.failed(&sqlite_error(rusqlite::ffi::SQLITE_CONSTRAINT));
        assert!(
            health.current().ok(),
            "a refused statement is not a storage state"
        );
        health.failed(&sqlite_error(rusqlite::ffi::SQLITE_FULL));
        assert_eq!(health.current().unwritable, Some(Unwritable::DiskFull));
        assert!(health.start_probe());
        assert!(!health.start_probe(), "one probe at a time");
        health.probed(&Ok(()));
        health.done_probing();
        assert!(health.current().ok(), "a probe that wrote clears the state");
        assert!(!health.start_probe(), "at most one probe a second");
    }
}

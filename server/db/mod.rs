//! The database: students, quiz attempts and answers, predictions, the run history, the
//! latest measurements, instructor sign-ins, class rounds, the experiment queue and each
//! worker's measured ceilings — the only class-wide state, in both modes. `--database` picks the engine: a
//! SQLite file (the default: WAL mode, `synchronous = FULL`, one connection behind a
//! mutex, which is how SQLite serialises writers anyway) or a `postgres://` URL (a pool
//! of connections, for several web nodes and workers sharing one class). Both are
//! created and migrated on start-up with the same migrations, one per dialect, and every
//! query is written once ([`sql`]); a SQLite file an older version wrote is copied beside
//! itself before it is migrated, and a database a newer version wrote is refused
//! ([`upgrade`]). Each [`Db::run`] is one transaction, so nothing is
//! acknowledged to a student before it has committed, on either engine. The queue's own
//! steps (a submission, a claim, a renewal) commit with [`Db::run_queue`], which on SQLite
//! does not wait for the disk (see there).
//!
//! Both drivers block, so queries run on tokio's blocking pool.

pub mod backup;
pub mod class_summary;
pub mod clock;
pub mod copy;
pub mod experiment_history;
pub mod fair_share;
pub mod gradebook;
pub mod health;
pub mod instructor_sessions;
pub mod job_claims;
pub mod jobs;
pub mod lab_attempts;
pub mod learner_runs;
pub mod listener;
pub mod measurements;
pub mod migrations;
pub mod playground_calls;
pub mod predictions;
pub mod progress;
pub mod rounds;
pub mod sql;
pub mod student_identity;
#[doc(hidden)]
pub mod testing;
mod upgrade;
pub mod worker_ceilings;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use r2d2_postgres::PostgresConnectionManager;
use r2d2_postgres::postgres::NoTls;
use rusqlite::Connection;

pub use sql::{Dialect, Row, Tx};

/// The database layer's errors.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// SQLite refused or failed.
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The blocking task running a query panicked or was cancelled.
    #[error("database task failed: {0}")]
    Task(String),
    /// PostgreSQL refused or failed.
    #[error("database: {0}")]
    Postgres(#[from] postgres::Error),
    /// No PostgreSQL connection could be had in time (the server is down or busy).
    #[error("database unavailable: {0}")]
    Unavailable(#[from] r2d2::Error),
    /// The connection mutex was poisoned by an earlier panic.
    #[error("database connection is unusable after an earlier failure")]
    Poisoned,
    /// The database cannot take writes now (a full disk, a read-only or removed file);
    /// see [`health`].
    #[error("database not writable: {0}")]
    NotWritable(health::Unwritable),
    /// A query that must return a row returned none.
    #[error("database: no row")]
    NoRow,
    /// A column held something else than the code reads.
    #[error("database: column {index}: {why}")]
    Column {
        /// The column's index.
        index: usize,
        /// What was wrong.
        why: String,
    },
    /// The database was written by a newer GPU Lab, whose schema this binary does not
    /// know: refused before anything is read or changed.
    #[error(
        "the database is at schema version {found}, newer than this gpulab knows (version {known}): a newer GPU Lab wrote it, and this one would misread it. Run that version or a newer one, or restore the backup taken before the upgrade (gpulab db restore); nothing was read or changed"
    )]
    NewerSchema {
        /// The database's schema version.
        found: i64,
        /// The newest this binary knows (its migrations).
        known: usize,
    },
    /// The backup taken before migrating a SQLite file could not be written: nothing was
    /// migrated.
    #[error("{0}")]
    UpgradeBackup(String),
}

impl DbError {
    /// Whether the database is out of reach (down, restarting, no connection free in
    /// time), rather than refusing this request: worth a 503 and a retry.
    pub fn is_unavailable(&self) -> bool {
        match self {
            Self::Unavailable(_) => true,
            Self::Postgres(e) => connection_lost(e),
            _ => false,
        }
    }

    /// Why the database cannot take writes, when this error says it cannot (a full
    /// disk, a read-only or removed file): worth a 503 that says nothing was saved.
    pub fn unwritable(&self) -> Option<health::Unwritable> {
        health::classify(self)
    }
}

/// Whether a PostgreSQL error is the connection or the server going away (not a refusal
/// of the statement).
fn connection_lost(e: &postgres::Error) -> bool {
    let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
    e.is_closed()
        || io
        || e.as_db_error().is_some_and(|db| {
            // 08: connection exceptions; 57P: the server shutting down.
            let code = db.code().code();
            code.starts_with("08") || code.starts_with("57P")
        })
}

/// Where the data lives: what `--database` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file (created if missing).
    Sqlite(PathBuf),
    /// A PostgreSQL server, by `postgres://` (or `postgresql://`) URL.
    Postgres(String),
}

impl Location {
    /// Reads `--database`: a `postgres://` URL, or else a file path.
    pub fn parse(text: &str) -> Self {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Self::Postgres(text.to_string())
        } else {
            Self::Sqlite(PathBuf::from(text))
        }
    }
}

impl std::fmt::Display for Location {
    /// The file, or the URL without its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => write!(f, "{}", redact(url)),
        }
    }
}

impl std::str::FromStr for Location {
    type Err = std::convert::Infallible;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Self::parse(text))
    }
}

/// A URL with any password replaced by `***` (for logs and pages).
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{scheme}://{name}:***@{host}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

type PgPool = r2d2::Pool<PostgresConnectionManager<NoTls>>;

enum Store {
    Sqlite(Mutex<SqliteFile>),
    Postgres(Option<PgPool>),
}

/// The one SQLite connection, and which file it opened: a file at the path with
/// another identity means the one open was removed or replaced.
struct SqliteFile {
    conn: Connection,
    identity: Option<file_id::FileId>,
}

/// The identity of the file at `path`, if there is one: its device and inode on Linux
/// and macOS, its volume serial number and file index on Windows (`file-id`, which
/// opens the file with every sharing mode there, so SQLite's own handle is unaffected).
fn file_identity(path: &Path) -> Option<file_id::FileId> {
    file_id::get_file_id(path).ok()
}

impl Drop for Store {
    fn drop(&mut self) {
        if let Self::Postgres(pool) = self
            && let Some(pool) = pool.take()
        {
            // A PostgreSQL client closes its connection on its own runtime, which may not
            // be started from inside tokio's: drop the pool on a plain thread.
            let _ = std::thread::Builder::new()
                .name("gpulab-db-close".into())
                .spawn(move || drop(pool));
        }
    }
}

/// A cloneable handle to the database.
#[derive(Clone)]
pub struct Db {
    store: Arc<Store>,
    location: Location,
    health: Arc<health::Health>,
}

/// SQLite's schema migrations, applied in order; `PRAGMA user_version` records how many
/// ran. Never edit one that has shipped: append a new one, and its PostgreSQL twin in
/// [`migrations::POSTGRES`].
pub(crate) const MIGRATIONS: &[&str] = &[
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
    // The experiment queue (db::jobs). Times are seconds since the epoch on the
    // database's clock.
    r"
CREATE TABLE jobs (
    id           INTEGER PRIMARY KEY,
    owner        TEXT NOT NULL,
    address      TEXT,
    experiment   TEXT NOT NULL,
    params       TEXT NOT NULL,
    prediction   REAL,
    turn         INTEGER NOT NULL,
    status       TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    started_at   REAL,
    finished_at  REAL,
    worker       TEXT,
    lease_until  REAL,
    tries        INTEGER NOT NULL DEFAULT 0,
    result       TEXT,
    error        TEXT
);
CREATE INDEX jobs_waiting ON jobs(status, turn, submitted_at);
CREATE INDEX jobs_by_owner ON jobs(owner, status);
CREATE TABLE workers (
    name     TEXT PRIMARY KEY,
    backend  TEXT NOT NULL,
    device   TEXT NOT NULL,
    seen_at  REAL NOT NULL,
    running  INTEGER NOT NULL DEFAULT 0
);
",
    // The allocator playground on a class of separate workers: which worker holds each
    // student's playground, and the requests web nodes pass to it (playground::remote).
    r"
CREATE TABLE playground_owners (
    student TEXT PRIMARY KEY,
    worker  TEXT NOT NULL
);
CREATE TABLE playground_calls (
    id         INTEGER PRIMARY KEY,
    student    TEXT NOT NULL,
    worker     TEXT NOT NULL,
    request    TEXT NOT NULL,
    reply      TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX playground_calls_by_worker ON playground_calls(worker, id);
",
    // Instructor sign-ins shared by the web nodes of a class (SHA-256 of the cookie).
    r"
CREATE TABLE instructor_sessions (
    id         TEXT PRIMARY KEY,
    created_at REAL NOT NULL
);
",
    // A class round's state, so every web node of a class shows the same round.
    r"
ALTER TABLE rounds ADD COLUMN status TEXT;
ALTER TABLE rounds ADD COLUMN error TEXT;
ALTER TABLE rounds ADD COLUMN closed INTEGER NOT NULL DEFAULT 0;
",
    // Readiness: the one row the writability probe rewrites (db::health), at most once
    // a second.
    r"
CREATE TABLE health (
    id         INTEGER PRIMARY KEY,
    checked_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    pad        TEXT
);
INSERT INTO health (id) VALUES (1);
",
    // The latest value measured per quantity and parameters (hardware-graded questions
    // and the script doctor read it here; db::measurements), and the value each job
    // measured (class rounds read it off their job).
    r"
CREATE TABLE measurements (
    quantity    TEXT NOT NULL,
    params      TEXT NOT NULL,
    value       REAL NOT NULL,
    measured_at REAL NOT NULL,
    PRIMARY KEY (quantity, params)
);
CREATE INDEX measurements_by_time ON measurements(quantity, measured_at);
ALTER TABLE jobs ADD COLUMN measured REAL;
",
    // The tuning labs' graded attempts (db::lab_attempts), recorded with the run.
    r"
CREATE TABLE lab_attempts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    student_id   TEXT NOT NULL,
    lab          TEXT NOT NULL,
    verdict      TEXT NOT NULL,
    score        REAL NOT NULL,
    passed       INTEGER NOT NULL,
    backend      TEXT NOT NULL,
    attempted_at TEXT NOT NULL
);
CREATE INDEX lab_attempts_by_student ON lab_attempts(student_id, lab);
",
    // A lab attempt's graded criteria and explanation (JSON), so the Labs page shows
    // the latest result without JavaScript.
    r"
ALTER TABLE lab_attempts ADD COLUMN summary TEXT;
",
    // Each worker's ceilings (JSON), measured once when it starts, so a web node's device
    // card shows a live worker's (db::worker_ceilings).
    r"
ALTER TABLE workers ADD COLUMN ceilings TEXT;
",
    // A class round is revealed by the worker that completes its job, in that same
    // transaction (db::job_claims::complete): the job names its round, and the round keeps
    // its question's unit for the predictions the reveal copies.
    r"
ALTER TABLE jobs ADD COLUMN round_id INTEGER;
ALTER TABLE rounds ADD COLUMN unit TEXT;
",
    // Learners' own GPU runs, uploaded from a GPU elsewhere, per student
    // (db::learner_runs).
    r"
CREATE TABLE learner_gpu_runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    student_id       TEXT NOT NULL,
    device           TEXT NOT NULL,
    recorded_at_unix INTEGER NOT NULL,
    imported_at      TEXT NOT NULL,
    run              TEXT NOT NULL
);
CREATE INDEX learner_gpu_runs_by_student ON learner_gpu_runs(student_id, id);
",
];

impl Db {
    /// Opens (creating if needed) and migrates the SQLite database at `path`.
    pub fn open(path: &Path) -> Result<Self, DbError> {
        Ok(Self {
            store: Arc::new(Store::Sqlite(Mutex::new(open_sqlite(path)?))),
            location: Location::Sqlite(path.to_path_buf()),
            health: Arc::default(),
        })
    }

    /// Opens `location`: a SQLite file, or a PostgreSQL server (a pool of up to
    /// `pool_size` connections; migrated under an advisory lock, so nodes starting
    /// together migrate once). Blocks: call it outside tokio's workers.
    pub fn connect(location: &Location, pool_size: u32) -> Result<Self, DbError> {
        match location {
            Location::Sqlite(path) => Self::open(path),
            Location::Postgres(url) => {
                // The PostgreSQL driver blocks on its own runtime, which may not start
                // inside tokio's: connect and migrate on a plain thread.
                let (url, location) = (url.clone(), location.clone());
                std::thread::spawn(move || Self::connect_postgres(&url, location, pool_size))
                    .join()
                    .map_err(|_| DbError::Task("connecting to PostgreSQL panicked".into()))?
            }
        }
    }

    fn connect_postgres(url: &str, location: Location, pool_size: u32) -> Result<Self, DbError> {
        {
            {
                let mut config: postgres::Config = url.parse()?;
                // Migrations' "already exists, skipping" notices are not news.
                config.options("-c client_min_messages=warning");
                let manager = PostgresConnectionManager::new(config, NoTls);
                let pool = r2d2::Pool::builder()
                    .max_size(pool_size.max(1))
                    .min_idle(Some(1))
                    // No test query per checkout (a round trip per transaction): a
                    // connection the server closed is caught at BEGIN and replaced.
                    .test_on_check_out(false)
                    .connection_timeout(Duration::from_secs(5))
                    .build(manager)?;
                let db = Self {
                    store: Arc::new(Store::Postgres(Some(pool))),
                    location,
                    health: Arc::default(),
                };
                db.run_blocking(migrations::postgres)?;
                Ok(db)
            }
        }
    }

    /// The SQLite file's path (none for PostgreSQL).
    fn sqlite_path(&self) -> Option<&Path> {
        match &self.location {
            Location::Sqlite(path) => Some(path),
            Location::Postgres(_) => None,
        }
    }

    /// Where the data lives.
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        match *self.store {
            Store::Sqlite(_) => Dialect::Sqlite,
            Store::Postgres(_) => Dialect::Postgres,
        }
    }

    /// A PostgreSQL connection string, for a worker's `LISTEN` connection.
    pub fn postgres_url(&self) -> Option<&str> {
        match &self.location {
            Location::Postgres(url) => Some(url),
            Location::Sqlite(_) => None,
        }
    }

    /// Runs `f` in one transaction on the blocking pool; commits when it returns `Ok`.
    pub async fn run<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx) -> Result<T, DbError> + Send + 'static,
    {
        let db = self.clone();
        tokio::task::spawn_blocking(move || db.run_blocking(f))
            .await
            .map_err(|e| DbError::Task(e.to_string()))?
    }

    /// Runs `f` in one transaction on the calling thread (for threads outside tokio,
    /// such as the experiment workers recording a finished run). A failure that says the
    /// database cannot take writes (a full disk, a read-only file) sets [`Db::health`].
    pub fn run_blocking<T>(
        &self,
        f: impl FnOnce(&mut Tx) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let outcome = self.transaction(f);
        if let Err(error) = &outcome {
            self.health.failed(error);
        }
        outcome
    }

    /// Runs `f` in one transaction like [`Db::run_blocking`], for the queue's own state
    /// changes (a submission, a claim, a lease renewal): on SQLite it commits without
    /// waiting for the disk (`synchronous = NORMAL`: it survives a killed process, and
    /// the next full commit — a finished run's record — makes it durable against power
    /// loss too), so the queue costs microseconds, not an fsync, per step. PostgreSQL
    /// commits as usual.
    pub fn run_queue<T>(
        &self,
        f: impl FnOnce(&mut Tx) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let outcome = self.transaction_with(f, false);
        if let Err(error) = &outcome {
            self.health.failed(error);
        }
        outcome
    }

    fn transaction<T>(&self, f: impl FnOnce(&mut Tx) -> Result<T, DbError>) -> Result<T, DbError> {
        self.transaction_with(f, true)
    }

    fn transaction_with<T>(
        &self,
        f: impl FnOnce(&mut Tx) -> Result<T, DbError>,
        full_sync: bool,
    ) -> Result<T, DbError> {
        match &*self.store {
            Store::Sqlite(file) => {
                let mut guard = file.lock().map_err(|_| DbError::Poisoned)?;
                if !full_sync {
                    guard.conn.pragma_update(None, "synchronous", "NORMAL")?;
                }
                let outcome =
                    Self::sqlite_transaction(&mut guard, self.sqlite_path(), &self.health, f);
                if !full_sync {
                    guard.conn.pragma_update(None, "synchronous", "FULL")?;
                }
                outcome
            }
            Store::Postgres(pool) => {
                let pool = pool
                    .as_ref()
                    .ok_or(DbError::Task("the database is closing".into()))?;
                let mut client = pool.get()?;
                let mut work = Some(f);
                // A pooled connection the server closed (a restart) fails at BEGIN, when
                // nothing has run yet: drop it (the pool discards a closed connection) and
                // take another, or a fresh one.
                let mut spare = pool.max_size();
                loop {
                    let error = match client.transaction() {
                        Ok(tx) => {
                            let mut tx = Tx::Postgres(tx);
                            let f = work.take().ok_or(DbError::NoRow)?;
                            let value = f(&mut tx)?;
                            let Tx::Postgres(tx) = tx else {
                                unreachable!("a PostgreSQL store opens PostgreSQL transactions")
                            };
                            tx.commit()?;
                            return Ok(value);
                        }
                        Err(error) => error,
                    };
                    if spare == 0 || !connection_lost(&error) {
                        return Err(error.into());
                    }
                    spare -= 1;
                    client = pool.get()?;
                }
            }
        }
    }

    /// One transaction on the SQLite connection `guard` holds.
    fn sqlite_transaction<T>(
        guard: &mut SqliteFile,
        path: Option<&Path>,
        health: &health::Health,
        f: impl FnOnce(&mut Tx) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        if health.current().unwritable == Some(health::Unwritable::FileGone) {
            // Reads go on from the open (removed) file until one is back.
            match reopen_if_replaced(guard, path) {
                Ok(()) | Err(DbError::NotWritable(_)) => {}
                Err(other) => return Err(other),
            }
        }
        let opened = guard.identity;
        let changes_before = guard.conn.total_changes();
        let mut tx = Tx::Sqlite(guard.conn.transaction()?);
        let value = f(&mut tx)?;
        let Tx::Sqlite(tx) = tx else {
            unreachable!("a SQLite store opens SQLite transactions")
        };
        // A file removed under the server still takes writes (the open handle
        // keeps it), and they would vanish with it: refuse them (one `stat` per
        // write), keep reads.
        if tx.total_changes() != changes_before && path.is_some_and(|p| file_identity(p) != opened)
        {
            tx.rollback()?;
            return Err(DbError::NotWritable(health::Unwritable::FileGone));
        }
        tx.commit()?;
        Ok(value)
    }

    /// Runs `f`, which must run **one** statement of the queue's own (its claim), on a
    /// PostgreSQL connection outside a transaction (the statement commits by itself, in
    /// one round trip). On SQLite it is [`Db::run_queue`].
    pub fn run_one<T>(&self, f: impl FnOnce(&mut Tx) -> Result<T, DbError>) -> Result<T, DbError> {
        match &*self.store {
            Store::Sqlite(_) => self.run_queue(f),
            Store::Postgres(pool) => {
                let pool = pool
                    .as_ref()
                    .ok_or(DbError::Task("the database is closing".into()))?;
                let mut client = pool.get()?;
                f(&mut Tx::PostgresStatement(&mut client))
            }
        }
    }

    /// Copies SQLite's write-ahead log into the database file and truncates it
    /// (shutdown), so the `.db` file alone holds every committed attempt. PostgreSQL
    /// needs nothing.
    pub async fn checkpoint(&self) -> Result<(), DbError> {
        if self.dialect() == Dialect::Postgres {
            return Ok(());
        }
        let db = self.clone();
        tokio::task::spawn_blocking(move || match &*db.store {
            Store::Sqlite(file) => {
                let guard = file.lock().map_err(|_| DbError::Poisoned)?;
                guard
                    .conn
                    .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
                Ok(())
            }
            Store::Postgres(_) => Ok(()),
        })
        .await
        .map_err(|e| DbError::Task(e.to_string()))?
    }

    /// Whether the database takes writes: the state as last seen, refreshed by a probe
    /// when the last one is more than [`health::PROBE_INTERVAL`] old (so a flood of
    /// readiness checks costs one small write a second).
    pub async fn writability(&self) -> health::Writability {
        if self.health.start_probe() {
            let db = self.clone();
            let probed = tokio::task::spawn_blocking(move || db.probe()).await;
            let outcome = probed.unwrap_or_else(|e| Err(DbError::Task(e.to_string())));
            self.health.probed(&outcome);
            self.health.done_probing();
        }
        self.health.current()
    }

    /// The state as last seen, without a probe.
    pub fn health(&self) -> health::Writability {
        self.health.current()
    }

    /// One probe: the SQLite file is still the one open (else, when a file is back at
    /// the path, it is opened instead), and a write that needs fresh pages commits.
    fn probe(&self) -> Result<(), DbError> {
        if let Store::Sqlite(file) = &*self.store {
            let mut guard = file.lock().map_err(|_| DbError::Poisoned)?;
            reopen_if_replaced(&mut guard, self.sqlite_path())?;
        }
        let written = self.transaction(probe_write);
        if let (Err(error), Store::Sqlite(file), Some(path)) =
            (&written, &*self.store, self.sqlite_path())
            && error.unwritable() == Some(health::Unwritable::ReadOnly)
        {
            // A connection opened on a read-only file stays read-only: try a fresh one,
            // which takes writes if the file does again.
            let mut guard = file.lock().map_err(|_| DbError::Poisoned)?;
            if let Ok(fresh) = open_sqlite(path) {
                *guard = fresh;
                drop(guard);
                return self.transaction(probe_write);
            }
        }
        written
    }
}

/// When another file is at `path` than the one open (an operator put one back), opens
/// it instead; `FileGone` while there is none.
fn reopen_if_replaced(file: &mut SqliteFile, path: Option<&Path>) -> Result<(), DbError> {
    let Some(path) = path else { return Ok(()) };
    let now = file_identity(path);
    if now.is_none() {
        return Err(DbError::NotWritable(health::Unwritable::FileGone));
    }
    if now != file.identity {
        tracing::warn!(path = %path.display(), "the database file was replaced; opening the one now at the path");
        *file = open_sqlite(path)?;
    }
    Ok(())
}

/// The probe's write: the health row takes a value of twelve pages and gives it back, so
/// on SQLite the write needs free pages and more room in the write-ahead log than one
/// student's write (a quiz attempt touches about six pages) — a full file or disk refuses
/// it, and a smaller write cannot succeed in the room a failed larger one left in the
/// log and make a full disk look writable — and commits.
fn probe_write(tx: &mut Tx) -> Result<(), DbError> {
    const PAD: usize = 12 * 4096;
    let now = clock::text_now(tx);
    tx.execute(
        &format!("UPDATE health SET checked_at = {now}, pad = ?1 WHERE id = 1"),
        crate::params!["x".repeat(PAD)],
    )?;
    tx.execute("UPDATE health SET pad = NULL WHERE id = 1", &[])?;
    Ok(())
}

/// Opens and migrates the SQLite file at `path` (creating it and its folder if needed).
fn open_sqlite(path: &Path) -> Result<SqliteFile, DbError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        // A missing folder would make SQLite fail with a vague "unable to open";
        // creating it is what a user pointing at a fresh volume expects.
        let _ = std::fs::create_dir_all(parent);
    }
    let mut conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.busy_timeout(Duration::from_secs(5))?;
    upgrade::backup_before_migrating(path, &conn)?;
    migrations::sqlite(&mut conn)?;
    Ok(SqliteFile {
        conn,
        identity: file_identity(path),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_is_a_file_unless_it_is_a_postgres_url_and_passwords_stay_out_of_logs() {
        assert_eq!(
            Location::parse("gpulab.db"),
            Location::Sqlite("gpulab.db".into())
        );
        assert_eq!(
            Location::parse("postgresql://u@h/db"),
            Location::Postgres("postgresql://u@h/db".into())
        );
        let url = Location::parse("postgres://gpulab:s3cret@db:5432/class");
        assert_eq!(url.to_string(), "postgres://gpulab:***@db:5432/class");
        assert_eq!(
            redact("postgres://gpulab@db/class"),
            "postgres://gpulab@db/class"
        );
    }

    #[test]
    fn opens_in_wal_mode_and_migrates_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/gpulab.db");
        let db = Db::open(&path).unwrap();
        drop(db);
        let conn = Connection::open(&path).unwrap();
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        drop(conn);
        Db::open(&path).expect("re-opening an up-to-date database does not re-run migrations");
    }
}

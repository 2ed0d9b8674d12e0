//! The database's clock, the one place both of its forms are written. The queue's tables
//! (jobs, workers, playground calls, instructor sessions, measurements) keep time as
//! seconds since the epoch (`REAL`), so ages and leases are arithmetic; the learners'
//! tables (attempts, predictions, rounds, lab attempts) keep ISO-8601 text, as exports
//! and pages show it. Both read the database's own clock, so the machines' clocks never
//! matter.

use super::{DbError, Dialect, Tx};

/// SQLite's "now, as stored text".
pub(super) const SQLITE_TEXT_NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";
/// PostgreSQL's expression for the same text.
pub(super) const POSTGRES_TEXT_NOW: &str =
    r#"to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"#;

/// The database's clock in seconds since the epoch, as an SQL expression.
pub fn epoch_now(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)",
        Dialect::Sqlite => "((julianday('now') - 2440587.5) * 86400.0)",
    }
}

/// The database's clock as stored text (`2026-11-27T01:02:03.456Z`), as an SQL
/// expression on this transaction's engine.
pub fn text_now(tx: &Tx) -> &'static str {
    match tx.dialect() {
        Dialect::Sqlite => SQLITE_TEXT_NOW,
        Dialect::Postgres => POSTGRES_TEXT_NOW,
    }
}

/// The database's clock now, in seconds since the epoch.
pub fn epoch(tx: &mut Tx) -> Result<f64, DbError> {
    tx.query_row(
        &format!("SELECT {}", epoch_now(tx.dialect())),
        crate::params![],
    )?
    .get(0)
}

/// The database's clock to the second, as the pages show it (`2026-11-27T01:02:03Z`).
pub fn text_to_the_second(tx: &mut Tx) -> Result<String, DbError> {
    let now = text_now(tx);
    tx.query_row(
        &format!("SELECT substr({now}, 1, 19) || 'Z'"),
        crate::params![],
    )?
    .get(0)
}

//! `gpulab db copy`: moves a SQLite gradebook into PostgreSQL without loss. Every table
//! a class keeps (students, attempts, answers, settings, resume codes, the run history,
//! predictions, rounds, lab attempts, learners' own GPU runs) is copied row by row, ids
//! included, in one PostgreSQL transaction that commits only after every table's count
//! and a checksum of the attempts and their answers read back equal on both sides. What
//! belongs to one server and not to the class ([`NOT_COPIED`]: the queue, its workers,
//! the device's measurements, sign-ins) is not: a unit test holds every table to one of
//! the two lists, so a new table cannot be left behind unnoticed.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use super::sql::{ToValue, Value};
use super::{Db, DbError, Tx};

/// The tables copied, parents before children.
pub const TABLES: &[&str] = &[
    "students",
    "settings",
    "attempts",
    "answers",
    "resume_codes",
    "experiment_runs",
    "predictions",
    "rounds",
    "round_predictions",
    "lab_attempts",
    "learner_gpu_runs",
];

/// The tables left behind, and why.
pub const NOT_COPIED: &[(&str, &str)] = &[
    ("jobs", "the queue does not outlive its server"),
    (
        "workers",
        "the workers register with the new database as they start",
    ),
    (
        "playground_owners",
        "a playground lives as long as its worker",
    ),
    (
        "playground_calls",
        "a playground lives as long as its worker",
    ),
    (
        "instructor_sessions",
        "sign-ins are one server's; the instructor signs in again",
    ),
    ("health", "one database's own write probe"),
    (
        "measurements",
        "the old server's device: the new one's GPU measures its own",
    ),
];

/// Tables whose `id` PostgreSQL generates: their sequence moves past the copied ids.
const GENERATED_IDS: &[&str] = &[
    "attempts",
    "experiment_runs",
    "predictions",
    "rounds",
    "lab_attempts",
    "learner_gpu_runs",
];

/// What was copied, and the checks that passed.
#[derive(Debug, Default)]
pub struct CopyReport {
    /// Rows per table (the same on both sides).
    pub counts: Vec<(&'static str, usize)>,
    /// SHA-256 of every attempt and answer, in id order (the same on both sides).
    pub checksum: String,
}

impl std::fmt::Display for CopyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{:<20} {:>10}", "table", "rows")?;
        for (table, count) in &self.counts {
            writeln!(f, "{table:<20} {count:>10}")?;
        }
        writeln!(
            f,
            "attempts+answers sha256 {} (equal on both sides)",
            self.checksum
        )
    }
}

/// Why a copy did not happen.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// A database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The target is not empty.
    #[error("the target database already has {0} students: copy only into an empty one")]
    NotEmpty(usize),
    /// What was read back differs (nothing was committed).
    #[error("{0} differs after the copy; nothing was committed")]
    Mismatch(String),
}

/// Copies everything of `source` (SQLite) into `target` (PostgreSQL), checked.
pub fn copy(source: &Db, target: &Db) -> Result<CopyReport, CopyError> {
    let tables = source.run_blocking(|tx| {
        TABLES
            .iter()
            .map(|table| Ok((*table, read_table(tx, table)?)))
            .collect::<Result<Vec<_>, DbError>>()
    })?;
    let expected = source.run_blocking(summarize)?;
    let outcome = target.run_blocking(|tx| {
        let students: usize = tx.query_row("SELECT COUNT(*) FROM students", &[])?.get(0)?;
        if students > 0 {
            return Ok(Err(CopyError::NotEmpty(students)));
        }
        for (table, (columns, rows)) in &tables {
            let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
            let sql = format!(
                "INSERT INTO {table} ({}) VALUES ({})",
                columns.join(", "),
                marks.join(", ")
            );
            for row in rows {
                let params: Vec<&dyn ToValue> = row.iter().map(|v| v as &dyn ToValue).collect();
                tx.execute(&sql, &params)?;
            }
        }
        for table in GENERATED_IDS {
            tx.query(
                &format!(
                    "SELECT setval(pg_get_serial_sequence('{table}', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM {table}"
                ),
                &[],
            )?;
        }
        let copied = summarize(tx)?;
        if copied.counts != expected.counts {
            return Ok(Err(CopyError::Mismatch("a table's row count".into())));
        }
        if copied.checksum != expected.checksum {
            return Ok(Err(CopyError::Mismatch("the checksum of attempts and answers".into())));
        }
        Ok(Ok(copied))
    });
    // An `Err` inside `Ok` was returned after a rollback (nothing committed).
    outcome?
}

type Table = (Vec<String>, Vec<Vec<Value>>);

fn read_table(tx: &mut Tx, table: &str) -> Result<Table, DbError> {
    let Tx::Sqlite(sqlite) = tx else {
        return Err(DbError::Task(
            "the source of a copy is a SQLite file".into(),
        ));
    };
    let columns: Vec<String> = sqlite
        .prepare(&format!("SELECT * FROM {table}"))?
        .column_names()
        .map(str::to_string)
        .collect();
    let order = if columns.iter().any(|c| c == "id") {
        "ORDER BY id"
    } else {
        ""
    };
    let rows = tx.query(
        &format!("SELECT {} FROM {table} {order}", columns.join(", ")),
        &[],
    )?;
    Ok((columns, rows.into_iter().map(|r| r.0).collect()))
}

/// Row counts per table and the checksum of attempts and answers, on either engine.
fn summarize(tx: &mut Tx) -> Result<CopyReport, DbError> {
    let mut counts = Vec::new();
    for table in TABLES {
        counts.push((
            *table,
            tx.query_row(&format!("SELECT COUNT(*) FROM {table}"), &[])?
                .get(0)?,
        ));
    }
    let mut hash = Sha256::new();
    let attempts = tx.query(
        "SELECT id, student_id, quiz_id, correct, total, passed, submitted_at FROM attempts ORDER BY id",
        &[],
    )?;
    for row in attempts {
        hash.update(format!("{:?}\n", row.0));
    }
    let answers = tx.query(
        "SELECT attempt_id, question_id, given, correct FROM answers ORDER BY attempt_id, question_id",
        &[],
    )?;
    for row in answers {
        hash.update(format!("{:?}\n", row.0));
    }
    let mut checksum = String::new();
    for byte in hash.finalize() {
        let _ = write!(checksum, "{byte:02x}");
    }
    Ok(CopyReport { counts, checksum })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_is_either_copied_or_left_behind_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&dir.path().join("gpulab.db")).unwrap();
        let tables: Vec<String> = db
            .run_blocking(|tx| {
                Ok(tx
                    .query(
                        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
                        &[],
                    )?
                    .into_iter()
                    .filter_map(|row| match row.0.into_iter().next() {
                        Some(Value::Text(name)) => Some(name),
                        _ => None,
                    })
                    .collect())
            })
            .unwrap();
        assert!(tables.len() > 10, "{tables:?}");
        for table in &tables {
            let copied = TABLES.contains(&table.as_str());
            let left = NOT_COPIED.iter().any(|(t, _)| t == table);
            assert!(
                copied != left,
                "{table}: in TABLES ({copied}) or NOT_COPIED ({left}), exactly one"
            );
        }
        for table in TABLES.iter().chain(NOT_COPIED.iter().map(|(t, _)| t)) {
            assert!(tables.iter().any(|t| t == table), "{table} is no table");
        }
    }
}

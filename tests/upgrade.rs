//! An upgrade keeps every grade. `tests/fixtures/upgrade/` holds a SQLite file at every
//! schema version GPU Lab has shipped, and a plain-SQL PostgreSQL dump at every one
//! since PostgreSQL came (written by its `generate.sh`): each opens under the current
//! code, migrates, and every row of every table reads back the same (the columns later
//! versions added hold their defaults), and the database still takes writes. Before it
//! migrates a SQLite file, the server writes a checked copy at the old version beside
//! it and logs where; a database a newer GPU Lab wrote is refused with a clear message,
//! before anything is read or changed, on both engines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gpulab::db::testing::{self, Scratch};
use gpulab::db::{Db, Location, backup};
use rusqlite::Connection;
use serde_json::{Map, Value};

use crate::support::{BinaryServer, repo_path};

/// Each table's rows as JSON objects (column → value), in a stable order.
type Tables = BTreeMap<String, Vec<Map<String, Value>>>;

/// Tables not compared: the readiness probe's one row (rewritten as the server checks
/// it can write) and PostgreSQL's schema version (which a migration moves on).
const NOT_CLASS_DATA: &[&str] = &["health", "schema_version"];

fn fixtures(prefix: &str, suffix: &str) -> Vec<(usize, PathBuf)> {
    let mut found: Vec<(usize, PathBuf)> = std::fs::read_dir(repo_path("tests/fixtures/upgrade"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            let version = name
                .strip_prefix(prefix)?
                .strip_suffix(suffix)?
                .parse()
                .ok()?;
            Some((version, path))
        })
        .collect();
    found.sort();
    found
}

/// The schema version this binary migrates to: a fresh file's.
fn current_version() -> i64 {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh.db");
    drop(Db::open(&path).unwrap());
    user_version(&path)
}

fn user_version(path: &Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

fn sorted(mut rows: Vec<Map<String, Value>>) -> Vec<Map<String, Value>> {
    rows.sort_by_key(|row| Value::Object(row.clone()).to_string());
    rows
}

fn sqlite_tables(path: &Path) -> Tables {
    let conn = Connection::open(path).unwrap();
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut tables = Tables::new();
    for name in names
        .into_iter()
        .filter(|n| !NOT_CLASS_DATA.contains(&n.as_str()))
    {
        let mut statement = conn.prepare(&format!("SELECT * FROM {name}")).unwrap();
        let columns: Vec<String> = statement.column_names().map(str::to_string).collect();
        let rows = statement
            .query_map([], |row| {
                let mut object = Map::new();
                for (i, column) in columns.iter().enumerate() {
                    use rusqlite::types::ValueRef;
                    let value = match row.get_ref(i)? {
                        ValueRef::Null => Value::Null,
                        ValueRef::Integer(n) => Value::from(n),
                        ValueRef::Real(x) => Value::from(x),
                        ValueRef::Text(t) => Value::from(String::from_utf8_lossy(t).into_owned()),
                        ValueRef::Blob(b) => Value::from(format!("{b:?}")),
                    };
                    object.insert(column.clone(), value);
                }
                Ok(object)
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        tables.insert(name, sorted(rows));
    }
    tables
}

/// A new attempt written after the upgrade gets the id after the fixture's three: the
/// id sequence (SQLite's rowid, PostgreSQL's identity) survived the migration.
fn assert_a_new_attempt_follows_the_old_ones(db: &Db, context: &str) {
    let id: i64 = db
        .run_blocking(|tx| {
            tx.query_row(
                "INSERT INTO attempts (student_id, quiz_id, correct, total, passed)
                 VALUES ('0f1e2d3c4b5a69788796a5b4c3d2e1f0', 'why-gpus', 1, 1, 1) RETURNING id",
                &[],
            )?
            .get(0)
        })
        .unwrap();
    assert_eq!(id, 4, "{context}: a new attempt follows the old ones");
}

/// Every row `before` held reads back the same `after` (the columns added since aside).
fn assert_every_row_kept(before: &Tables, after: &Tables, context: &str) {
    assert!(
        before.values().map(Vec::len).sum::<usize>() >= 3,
        "{context}: the fixture holds rows"
    );
    for (table, rows) in before {
        let later = after
            .get(table)
            .unwrap_or_else(|| panic!("{context}: table {table} is gone"));
        let projected = sorted(
            later
                .iter()
                .map(|row| {
                    row.iter()
                        .filter(|(column, _)| rows.first().is_none_or(|r| r.contains_key(*column)))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                })
                .collect(),
        );
        assert_eq!(&projected, rows, "{context}: table {table}");
    }
}

#[test]
fn every_shipped_sqlite_version_opens_migrates_keeps_every_row_and_leaves_a_backup() {
    let current = current_version();
    let found = fixtures("sqlite-v", ".db");
    assert_eq!(
        found.iter().map(|(v, _)| *v as i64).collect::<Vec<_>>(),
        (1..=current).collect::<Vec<_>>(),
        "a SQLite fixture per shipped version: run tests/fixtures/upgrade/generate.sh after appending a migration"
    );
    for (version, fixture) in found {
        let context = format!("SQLite v{version}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gpulab.db");
        std::fs::copy(&fixture, &path).unwrap();
        let before = sqlite_tables(&path);
        let db = Db::open(&path).unwrap_or_else(|e| panic!("{context}: {e}"));
        assert_eq!(user_version(&path), current, "{context}: migrated");
        assert_every_row_kept(&before, &sqlite_tables(&path), &context);
        assert_a_new_attempt_follows_the_old_ones(&db, &context);
        drop(db);
        let backups: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.to_string_lossy()
                    .contains(&format!("gpulab.db.v{version}-backup-"))
            })
            .collect();
        if version as i64 == current {
            assert!(backups.is_empty(), "{context}: nothing to migrate, no copy");
            continue;
        }
        assert_eq!(backups.len(), 1, "{context}: one copy beside the file");
        let report = backup::check(&backups[0]).unwrap();
        assert_eq!(
            report.schema_version, version as i64,
            "{context}: the copy is the old version"
        );
        assert_eq!(
            sqlite_tables(&backups[0]),
            before,
            "{context}: the copy holds every row"
        );
    }
}

#[test]
fn the_server_says_where_it_kept_the_copy_before_migrating() {
    let (version, fixture) = fixtures("sqlite-v", ".db").swap_remove(0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("class.db");
    std::fs::copy(&fixture, &path).unwrap();
    let server = BinaryServer::start(&path);
    assert!(
        server.wait_for_log(
            &format!("class.db.v{version}-backup-"),
            Duration::from_secs(10)
        ),
        "the log names the copy"
    );
}

#[test]
fn a_sqlite_file_a_newer_gpulab_wrote_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gpulab.db");
    drop(Db::open(&path).unwrap());
    let newer = current_version() + 1;
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", newer)
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    let refused = Db::open(&path).err().expect("a newer database is refused");
    let message = refused.to_string();
    assert!(
        message.contains(&format!(
            "schema version {newer}, newer than this gpulab knows"
        )),
        "{message}"
    );
    assert!(message.contains("nothing was read or changed"), "{message}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file is untouched"
    );
    let beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("backup"))
        .collect();
    assert!(beside.is_empty(), "no copy of a refused file: {beside:?}");
}

/// A fresh, empty database on the test server, dropped with the scratch.
fn empty_postgres(server: &str) -> (String, Scratch) {
    let name = format!("gpulab_upgrade_{}", testing::random_hex());
    let mut admin = postgres::Client::connect(server, postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    let scratch = Scratch::Database {
        server: server.to_string(),
        name: name.clone(),
    };
    (testing::with_database(server, &name), scratch)
}

fn postgres_tables(url: &str) -> Tables {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let names: Vec<String> = client
        .query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let mut tables = Tables::new();
    for name in names
        .into_iter()
        .filter(|n| !NOT_CLASS_DATA.contains(&n.as_str()))
    {
        let rows = client
            .query(
                &format!("SELECT row_to_json(t)::text FROM public.{name} t"),
                &[],
            )
            .unwrap()
            .iter()
            .map(
                |row| match serde_json::from_str(row.get::<_, &str>(0)).unwrap() {
                    Value::Object(object) => object,
                    other => panic!("{other}"),
                },
            )
            .collect();
        tables.insert(name, sorted(rows));
    }
    tables
}

/// The PostgreSQL server to test on, or `None` (skipped loudly) without one.
fn postgres_server() -> Option<String> {
    let server = testing::postgres_server();
    if server.is_none() {
        assert!(
            std::env::var(testing::REQUIRE_ENV).as_deref() != Ok("1"),
            "the upgrade tests need {}",
            testing::POSTGRES_ENV
        );
        eprintln!(
            "SKIPPED: the PostgreSQL upgrade tests need {}",
            testing::POSTGRES_ENV
        );
    }
    server
}

#[test]
fn every_shipped_postgres_version_opens_migrates_and_keeps_every_row() {
    let Some(server) = postgres_server() else {
        return;
    };
    // Plain threads: the synchronous PostgreSQL client runs a runtime of its own.
    std::thread::spawn(move || {
        let current = current_version();
        let found = fixtures("pg-v", ".sql");
        assert_eq!(
            found.last().map(|(v, _)| *v as i64),
            Some(current),
            "a PostgreSQL dump up to this version: run tests/fixtures/upgrade/generate.sh"
        );
        for (version, dump) in found {
            let context = format!("PostgreSQL v{version}");
            let (url, _scratch) = empty_postgres(&server);
            let sql = std::fs::read_to_string(&dump).unwrap();
            postgres::Client::connect(&url, postgres::NoTls)
                .unwrap()
                .batch_execute(&sql)
                .unwrap_or_else(|e| panic!("{context}: the dump loads: {e}"));
            let before = postgres_tables(&url);
            let db = Db::connect(&Location::Postgres(url.clone()), 2)
                .unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_every_row_kept(&before, &postgres_tables(&url), &context);
            assert_a_new_attempt_follows_the_old_ones(&db, &context);
        }
    })
    .join()
    .unwrap();
}

#[test]
fn a_postgres_database_a_newer_gpulab_wrote_is_refused_untouched() {
    let Some(server) = postgres_server() else {
        return;
    };
    std::thread::spawn(move || {
        let (url, _scratch) = empty_postgres(&server);
        drop(Db::connect(&Location::Postgres(url.clone()), 2).unwrap());
        let newer = current_version() + 1;
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("UPDATE schema_version SET version = {newer}"))
            .unwrap();
        let before = postgres_tables(&url);
        let refused = Db::connect(&Location::Postgres(url.clone()), 2)
            .err()
            .expect("a newer database is refused");
        let message = refused.to_string();
        assert!(
            message.contains(&format!(
                "schema version {newer}, newer than this gpulab knows"
            )),
            "{message}"
        );
        let version: i64 = client
            .query_one("SELECT version FROM schema_version", &[])
            .unwrap()
            .get(0);
        assert_eq!(version, newer, "the version is untouched");
        assert_eq!(postgres_tables(&url), before, "every table is untouched");
    })
    .join()
    .unwrap();
}

//! Databases for tests, on every engine this machine can offer: always a SQLite file in
//! a fresh folder, and a fresh PostgreSQL database when `GPULAB_TEST_POSTGRES` holds a
//! server's URL (a role that may `CREATE DATABASE`, such as
//! `postgres://postgres@127.0.0.1:55432/postgres`). Without it the PostgreSQL half is
//! skipped loudly, or refused when `GPULAB_REQUIRE_POSTGRES=1` (CI that must test both).
//!
//! Not part of the server: public only so the integration tests can use it too.

use std::path::PathBuf;

use super::{Db, Location};

/// The server URL the PostgreSQL half of the tests uses.
pub const POSTGRES_ENV: &str = "GPULAB_TEST_POSTGRES";
/// Set to `1` to make a missing [`POSTGRES_ENV`] an error rather than a skip.
pub const REQUIRE_ENV: &str = "GPULAB_REQUIRE_POSTGRES";

/// What a test database leaves behind, removed when this is dropped: the SQLite file's
/// folder, or the PostgreSQL database (dropped, with any connection still open to it).
#[derive(Debug)]
pub enum Scratch {
    /// A folder under the system's temporary directory.
    Folder(PathBuf),
    /// A database on the server at `server` (the URL it was created through).
    Database {
        /// The server URL from [`POSTGRES_ENV`].
        server: String,
        /// The database's name.
        name: String,
    },
}

impl Drop for Scratch {
    fn drop(&mut self) {
        match self {
            Self::Folder(path) => {
                let _ = std::fs::remove_dir_all(path);
            }
            Self::Database { server, name } => {
                let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                let server = server.clone();
                // Best effort: a leftover database on a throwaway server harms nothing.
                let _ = on_plain_thread(move || -> Result<(), postgres::Error> {
                    let mut client = postgres::Client::connect(&server, postgres::NoTls)?;
                    client.batch_execute(&sql)
                });
            }
        }
    }
}

/// A database on each engine available: `(engine name, database, its scratch)`. Keep
/// the scratch alive as long as the database is used.
pub fn backends() -> Vec<(&'static str, Db, Scratch)> {
    let mut all = vec![sqlite()];
    match postgres_server() {
        Some(server) => all.push(postgres(&server)),
        None => {
            assert!(
                std::env::var(REQUIRE_ENV).as_deref() != Ok("1"),
                "{REQUIRE_ENV}=1 but {POSTGRES_ENV} is not set: give it a PostgreSQL server's \
                 URL, e.g. postgres://postgres@127.0.0.1:55432/postgres (tests/pg/cluster.sh \
                 starts one)"
            );
            eprintln!(
                "SKIPPED: PostgreSQL half of this test (set {POSTGRES_ENV}=postgres://USER@HOST:PORT/postgres)"
            );
        }
    }
    all
}

/// The server URL from [`POSTGRES_ENV`], if one is set.
pub fn postgres_server() -> Option<String> {
    std::env::var(POSTGRES_ENV)
        .ok()
        .map(|url| url.trim().to_string())
        .filter(|url| !url.is_empty())
}

/// A migrated SQLite database in a fresh folder.
pub fn sqlite() -> (&'static str, Db, Scratch) {
    let folder = std::env::temp_dir().join(format!("gpulab-test-{}", random_hex()));
    std::fs::create_dir_all(&folder).expect("the temporary directory is writable");
    let scratch = Scratch::Folder(folder.clone());
    let db = Db::open(&folder.join("test.db")).expect("a fresh SQLite database opens");
    ("sqlite", db, scratch)
}

/// A migrated, fresh database on the PostgreSQL server at `server` (a URL whose role may
/// create databases).
pub fn postgres(server: &str) -> (&'static str, Db, Scratch) {
    let name = format!("gpulab_test_{}", random_hex());
    let (url, create) = (server.to_string(), format!("CREATE DATABASE {name}"));
    on_plain_thread(move || -> Result<(), postgres::Error> {
        let mut client = postgres::Client::connect(&url, postgres::NoTls)?;
        client.batch_execute(&create)
    })
    .unwrap_or_else(|e| panic!("{POSTGRES_ENV}: cannot create a test database on {server}: {e}"));
    let scratch = Scratch::Database {
        server: server.to_string(),
        name: name.clone(),
    };
    let db = Db::connect(&Location::Postgres(with_database(server, &name)), 4)
        .unwrap_or_else(|e| panic!("{POSTGRES_ENV}: cannot open the test database {name}: {e}"));
    ("postgres", db, scratch)
}

/// `url` naming database `name` instead of the one it names (its query string kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}

/// The synchronous PostgreSQL client runs its own runtime, which must not start on a
/// tokio worker: run `f` on a plain thread.
fn on_plain_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(f)
        .join()
        .expect("the PostgreSQL client thread does not panic")
}

/// A full disk, simulated on a SQLite database: the file may grow by `spare_pages` more
/// pages (`PRAGMA max_page_count`, which makes SQLite answer `SQLITE_FULL` as a full
/// disk does); `None` lifts the cap (space is back). Returns the cap now in force.
pub fn cap_sqlite_pages(db: &Db, spare_pages: Option<i64>) -> i64 {
    let super::Store::Sqlite(file) = &*db.store else {
        panic!("only a SQLite database has a page cap")
    };
    let guard = file.lock().expect("the connection is not poisoned");
    let pages: i64 = guard
        .conn
        .pragma_query_value(None, "page_count", |row| row.get(0))
        .expect("page_count reads");
    let cap = spare_pages.map_or(i64::from(u32::MAX) - 1, |spare| pages + spare);
    guard
        .conn
        .query_row(&format!("PRAGMA max_page_count = {cap}"), [], |row| {
            row.get(0)
        })
        .expect("max_page_count sets")
}

/// Makes the SQLite connection refuse writes as a read-only file does (`PRAGMA
/// query_only`, answered `SQLITE_READONLY`); the health probe's fresh connection (a
/// file that takes writes again) clears it.
pub fn make_sqlite_read_only(db: &Db) {
    let super::Store::Sqlite(file) = &*db.store else {
        panic!("only a SQLite connection can be made read-only here")
    };
    let guard = file.lock().expect("the connection is not poisoned");
    guard
        .conn
        .pragma_update(None, "query_only", true)
        .expect("query_only sets");
}

/// Sixteen random hex digits, for a scratch database's name.
pub fn random_hex() -> String {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_name_replaces_the_urls_path_only() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:55432/postgres", "t1"),
            "postgres://postgres@127.0.0.1:55432/t1"
        );
        assert_eq!(
            with_database("postgresql://u:p@h:5/db?sslmode=disable", "t2"),
            "postgresql://u:p@h:5/t2?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "t3"), "postgres://h/t3");
    }
}

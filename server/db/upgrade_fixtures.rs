//! Writes the upgrade fixtures under `tests/fixtures/upgrade/` (run by
//! `tests/fixtures/upgrade/generate.sh`, never by the suite): for each schema version
//! this project has shipped — each prefix of [`MIGRATIONS`], which are never edited once
//! shipped — a SQLite file and a PostgreSQL database built as that version built it:
//! migration 1, the rows a class of that version wrote, migration 2, its rows, and so
//! on. The rows cover every kind a class keeps (students with awkward names, quiz
//! attempts and answers, resume codes, the run history, predictions, rounds, jobs,
//! workers, playgrounds, instructor sign-ins, measurements, lab attempts). The script
//! then dumps each PostgreSQL database as plain SQL; `tests/upgrade.rs` opens them all
//! under the current code.

use std::path::Path;

use rusqlite::Connection;

use crate::db::MIGRATIONS;
use crate::db::migrations::to_postgres;
use crate::db::testing::with_database;

const ZOE: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
const ANON: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
const FORMULA: &str = "ffffffffffffffffffffffffffffff01";

/// The rows a class of version `version` wrote after its own migration, in SQL both
/// engines run (ids that the database generates are left to it).
fn rows_of(version: usize) -> String {
    match version {
        1 => format!(
            "INSERT INTO students (id, display_name, created_at) VALUES
               ('{ZOE}', 'Zoë O''Brien', '2026-09-01T08:00:00.000Z'),
               ('{ANON}', NULL, '2026-09-01T08:05:12.345Z'),
               ('{FORMULA}', '=SUM(A1) <b>bold</b>', '2026-09-02T10:00:00.000Z');
             INSERT INTO attempts (student_id, quiz_id, correct, total, passed, submitted_at) VALUES
               ('{ZOE}', 'why-gpus', 4, 5, 1, '2026-09-01T08:10:00.000Z'),
               ('{ZOE}', 'why-gpus', 5, 5, 1, '2026-09-01T08:20:00.125Z'),
               ('{ANON}', 'memory-hierarchy', 1, 6, 0, '2026-09-03T12:00:00.000Z');
             INSERT INTO answers (attempt_id, question_id, given, correct) VALUES
               (1, 'latency-vs-throughput', '[\"b\"]', 1),
               (1, 'pcie-bandwidth', '[\"a\",\"c\"]', 0),
               (2, 'latency-vs-throughput', '[\"b\"]', 1),
               (3, 'hbm-bytes', '3.5', 0);"
        ),
        2 => "INSERT INTO settings (key, value) VALUES
                ('pseudonym_key', '9d5c0a1e7f3b2c4d6e8f0a1b3c5d7e9f');"
            .into(),
        3 => format!(
            "INSERT INTO resume_codes (code, student_id, created_at) VALUES
               ('BEAR-CLOUD-7', '{ZOE}', '2026-09-01T08:30:00.000Z');
             INSERT INTO experiment_runs (student_id, experiment, params, backend, device, duration_ms, ok, error, finished_at) VALUES
               ('{ZOE}', 'transfer', '{{\"max_bytes\":1048576}}', 'cpu', 'AMD EPYC (2 cores)', 1234, 1, NULL, '2026-09-01T09:00:00.000Z'),
               ('{ANON}', 'matmul', '{{\"max_size\":128}}', 'cuda', 'NVIDIA H200', 87, 0, 'out of memory: 141 GiB', '2026-09-03T12:30:00.000Z');"
        ),
        4 => format!(
            "INSERT INTO predictions (student_id, experiment, quantity, params, predicted, measured, unit, backend, device, created_at) VALUES
               ('{ZOE}', 'transfer', 'transfer.h2d_pinned_gbps', '{{\"max_bytes\":1048576}}', 12.5, 11.873046875, 'GB/s', 'cuda', 'NVIDIA H200', '2026-09-04T09:00:00.000Z'),
               ('{FORMULA}', 'timing', 'timing.underestimate_factor', '{{}}', 0.1, 3.0000000000000004, '×', 'cpu', 'AMD EPYC (2 cores)', '2026-09-04T09:01:00.000Z');"
        ),
        5 => format!(
            "INSERT INTO rounds (experiment, quantity, params, measured, backend, device, opened_at, revealed_at) VALUES
               ('matmul', 'matmul.crossover_size', '{{\"max_size\":1024}}', 256.0, 'cuda', 'NVIDIA H200', '2026-09-05T10:00:00.000Z', '2026-09-05T10:02:00.000Z'),
               ('timing', 'timing.underestimate_factor', '{{}}', NULL, NULL, NULL, '2026-09-05T11:00:00.000Z', NULL);
             INSERT INTO round_predictions (round_id, student_id, predicted, created_at) VALUES
               (1, '{ZOE}', 512.0, '2026-09-05T10:00:30.000Z'),
               (1, '{ANON}', 64.25, '2026-09-05T10:00:45.000Z'),
               (2, '{ZOE}', 2.5, '2026-09-05T11:00:10.000Z');"
        ),
        6 => format!(
            "INSERT INTO jobs (id, owner, address, experiment, params, prediction, turn, status, submitted_at, started_at, finished_at, worker, lease_until, tries, result, error) VALUES
               (4503599627370495, '{ZOE}', '10.0.0.7', 'transfer', '{{\"max_bytes\":1048576}}', 12.5, 0, 'done', 1788000000.25, 1788000000.5, 1788000001.75, 'gpu-0', NULL, 1, '{{\"rows\":[],\"provenance\":{{\"backend\":\"cuda\"}}}}', NULL),
               (17, '{ANON}', NULL, 'matmul', '{{\"max_size\":128}}', NULL, 0, 'failed', 1788000002.0, 1788000002.5, 1788000003.0, 'gpu-0', NULL, 2, NULL, 'the job ran out of time'),
               (99, '{FORMULA}', '2001:db8::1', 'timing', '{{}}', NULL, 1, 'queued', 1788000004.125, NULL, NULL, NULL, NULL, 0, NULL, NULL);
             INSERT INTO workers (name, backend, device, seen_at, running) VALUES
               ('gpu-0', 'cuda', 'NVIDIA H200', 1788000005.5, 0);"
        ),
        7 => format!(
            "INSERT INTO playground_owners (student, worker) VALUES ('{ZOE}', 'gpu-0');
             INSERT INTO playground_calls (id, student, worker, request, reply, created_at) VALUES
               (1, '{ZOE}', 'gpu-0', '{{\"allocate\":{{\"bytes\":1048576}}}}', '{{\"ok\":true}}', 1788000006.0);"
        ),
        8 => "INSERT INTO instructor_sessions (id, created_at) VALUES
                ('5f2b7c1d9e3a4b6c8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e', 1788000007.0);"
            .into(),
        9 => "UPDATE rounds SET status = 'revealed', closed = 1 WHERE revealed_at IS NOT NULL;
              UPDATE rounds SET status = 'failed', error = 'the worker stopped' WHERE revealed_at IS NULL;"
            .into(),
        11 => "INSERT INTO measurements (quantity, params, value, measured_at) VALUES
                 ('transfer.h2d_pinned_gbps', '{\"max_bytes\":1048576}', 11.873046875, 1788000001.75);
               UPDATE jobs SET measured = 11.873046875 WHERE status = 'done';"
            .into(),
        12 => format!(
            "INSERT INTO lab_attempts (student_id, lab, verdict, score, passed, backend, attempted_at) VALUES
               ('{ZOE}', 'feed-the-gpu', 'pass', 0.875, 1, 'cuda', '2026-09-06T09:00:00.000Z'),
               ('{ANON}', 'stop-waiting', 'fail', 0.3333333333333333, 0, 'cpu', '2026-09-06T09:05:00.000Z');"
        ),
        13 => "UPDATE lab_attempts SET summary = '{\"criteria\":[{\"name\":\"speed-up\",\"met\":true}]}' WHERE verdict = 'pass';"
            .into(),
        14 => "UPDATE workers SET ceilings = '{\"memory_gbps\":4200.5}' WHERE name = 'gpu-0';".into(),
        15 => "UPDATE jobs SET round_id = 1 WHERE id = 17;
               UPDATE rounds SET unit = 'n' WHERE id = 1;"
            .into(),
        16 => format!(
            "INSERT INTO learner_gpu_runs (student_id, device, recorded_at_unix, imported_at, run) VALUES
               ('{ZOE}', 'Tesla T4', 1788000010, '2026-09-07T09:00:00.000Z', '{{\"format\":\"gpulab-bench\",\"results\":[]}}');"
        ),
        _ => String::new(),
    }
}

/// A SQLite file at schema `version`, small (1 KiB pages, no write-ahead log).
fn write_sqlite(path: &Path, version: usize) {
    let _ = std::fs::remove_file(path);
    let conn = Connection::open(path).unwrap();
    conn.execute_batch("PRAGMA page_size = 1024; PRAGMA journal_mode = DELETE;")
        .unwrap();
    for (i, migration) in MIGRATIONS.iter().enumerate().take(version) {
        conn.execute_batch(migration).unwrap();
        conn.execute_batch(&rows_of(i + 1)).unwrap();
        conn.pragma_update(None, "user_version", i as i64 + 1)
            .unwrap();
    }
    conn.execute_batch("VACUUM").unwrap();
}

/// A PostgreSQL database `name` on `server` at schema `version`, as `migrations::postgres`
/// leaves one (the schema translated, `schema_version` holding the version).
fn write_postgres(server: &str, name: &str, version: usize) {
    let mut admin = postgres::Client::connect(server, postgres::NoTls).unwrap();
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .unwrap();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    let url = with_database(server, name);
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute("CREATE TABLE schema_version (version BIGINT NOT NULL)")
        .unwrap();
    for (i, migration) in MIGRATIONS.iter().enumerate().take(version) {
        client.batch_execute(&to_postgres(migration)).unwrap();
        client.batch_execute(&rows_of(i + 1)).unwrap();
    }
    client
        .batch_execute(&format!(
            "INSERT INTO schema_version (version) VALUES ({version})"
        ))
        .unwrap();
}

/// The first version with PostgreSQL (`gpulab db copy` and web nodes came with it).
const FIRST_POSTGRES_VERSION: usize = 7;

#[test]
#[ignore = "writes the fixtures: run by tests/fixtures/upgrade/generate.sh"]
fn write_upgrade_fixtures() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade");
    std::fs::create_dir_all(&folder).unwrap();
    let server = std::env::var("GPULAB_FIXTURE_POSTGRES").ok();
    // A shipped version's fixtures are kept as they were written (migration 10 stamps the
    // time, so a second writing would differ): only versions without one are written.
    for version in 1..=MIGRATIONS.len() {
        let sqlite = folder.join(format!("sqlite-v{version:02}.db"));
        if !sqlite.exists() {
            write_sqlite(&sqlite, version);
        }
        let dump = folder.join(format!("pg-v{version:02}.sql"));
        if let Some(server) = server.as_deref()
            && version >= FIRST_POSTGRES_VERSION
            && !dump.exists()
        {
            // The plain thread: the synchronous client runs a runtime of its own.
            let server = server.to_string();
            std::thread::spawn(move || {
                write_postgres(&server, &format!("gpulab_fixture_v{version:02}"), version);
            })
            .join()
            .unwrap();
        }
    }
}

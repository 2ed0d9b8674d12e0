//! `gpulab db backup` while the class writes: the copy opens, passes SQLite's integrity
//! check, and holds every attempt acknowledged before the backup began; `gpulab db
//! restore` refuses to overwrite the live database, and puts the copy in place of a
//! stopped one (keeping the one it replaces).

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::support::quiz::{json_answers, submit};
use crate::support::{spawn_tuned, spawn_with, student, test_config};

const QUIZ: &str = "gpu-memory";
const WRITERS: usize = 4;

fn gpulab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .args(args)
        .env_remove("GPULAB_DATABASE")
        .output()
        .expect("the binary runs")
}

/// Attempts per student in the SQLite file at `path`, opened read-only.
fn attempts_in(path: &std::path::Path, students: &[String]) -> Vec<usize> {
    let count = |conn: &rusqlite::Connection, student: &String| -> usize {
        let n: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM attempts WHERE student_id = ?1",
                [student],
                |row| row.get(0),
            )
            .unwrap();
        usize::try_from(n).unwrap()
    };
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    students.iter().map(|s| count(&conn, s)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_students_write_holds_every_attempt_acknowledged_before_it() {
    let app = Arc::new(
        spawn_tuned(|config| {
            config.limits.attempts_per_minute = 100_000;
            config.limits.writes_per_minute_per_address = 100_000;
        })
        .await,
    );
    let live = match &app.state.config.database {
        gpulab::db::Location::Sqlite(path) => path.clone(),
        other => panic!("a SQLite test database, not {other}"),
    };
    let quiz = app.state.course.quiz(QUIZ).unwrap().clone();
    let answers = Arc::new(json_answers(&quiz, 4));
    let stop = Arc::new(AtomicBool::new(false));
    let mut students = Vec::new();
    let mut acknowledged = Vec::new();
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let client = student();
        let me: serde_json::Value = client
            .get(format!("{}/api/me/progress", app.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        students.push(me["student_id"].as_str().unwrap().to_string());
        let count = Arc::new(AtomicUsize::new(0));
        acknowledged.push(Arc::clone(&count));
        let (app, answers, stop) = (Arc::clone(&app), Arc::clone(&answers), Arc::clone(&stop));
        writers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let response = submit(&app, &client, QUIZ, &answers).await;
                assert!(response.status().is_success(), "{}", response.status());
                count.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    // Let the writers get going, then take the backup while they write.
    while acknowledged
        .iter()
        .map(|c| c.load(Ordering::SeqCst))
        .sum::<usize>()
        < 40
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let before: Vec<usize> = acknowledged
        .iter()
        .map(|c| c.load(Ordering::SeqCst))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("grades-backup.db");
    let (live_arg, copy_arg) = (
        live.to_str().unwrap().to_string(),
        copy.to_str().unwrap().to_string(),
    );
    let output = tokio::task::spawn_blocking(move || {
        gpulab(&["db", "backup", &copy_arg, "--database", &live_arg])
    })
    .await
    .unwrap();
    let during: usize = acknowledged.iter().map(|c| c.load(Ordering::SeqCst)).sum();
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        said.contains("integrity ok") && said.contains("attempts"),
        "{said}"
    );
    let in_copy = attempts_in(&copy, &students);
    for (i, (kept, acked)) in in_copy.iter().zip(&before).enumerate() {
        assert!(
            kept >= acked,
            "writer {i}: {kept} in the copy, {acked} acknowledged before it"
        );
    }
    assert!(
        during > before.iter().sum::<usize>(),
        "the students kept writing while the backup ran"
    );

    // A backup never overwrites, and a restore never replaces the live database.
    let again = gpulab(&[
        "db",
        "backup",
        copy.to_str().unwrap(),
        "--database",
        live.to_str().unwrap(),
    ]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let refused = gpulab(&[
        "db",
        "restore",
        copy.to_str().unwrap(),
        "--database",
        live.to_str().unwrap(),
    ]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("in use by a running server"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let stored_live = attempts_in(&live, &students);
    drop(app);

    // Restored over a stopped server's database: the copy is what a server then serves,
    // and the database it replaced is kept beside it.
    let stopped = dir.path().join("class.db");
    drop(gpulab::db::Db::open(&stopped).unwrap());
    let restored = gpulab(&[
        "db",
        "restore",
        copy.to_str().unwrap(),
        "--database",
        stopped.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&restored.stdout);
    assert!(
        restored.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&restored.stderr)
    );
    assert!(said.contains("kept at"), "{said}");
    assert_eq!(attempts_in(&stopped, &students), in_copy);
    assert!(in_copy.iter().zip(&stored_live).all(|(c, l)| c <= l));
    let served = spawn_with(test_config(stopped)).await;
    let client = student();
    let ready = client
        .get(format!("{}/readyz", served.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), reqwest::StatusCode::OK);
}

#[test]
fn backup_of_a_postgres_database_points_to_pg_dump() {
    let output = gpulab(&[
        "db",
        "backup",
        "x.db",
        "--database",
        "postgres://u:secret@h/class",
    ]);
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("pg_dump") && !said.contains("secret"),
        "{said}"
    );
}

//! `gpulab db copy`: a SQLite gradebook with attempts, answers, a prediction and the run
//! history moves into PostgreSQL with every count and the attempts' checksum checked;
//! a second copy into the now non-empty database is refused; a web node on PostgreSQL
//! then shows the student the same progress.

use std::process::Command;

use serde_json::{Value, json};

use super::{class_database, web_node};
use crate::support::client::{json, send_json};
use crate::support::quiz::json_answers;
use crate::support::{spawn_with, student, test_config};

fn copy(from: &std::path::Path, to: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .args(["db", "copy", "--from"])
        .arg(from)
        .args(["--to", to])
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_copy_moves_a_sqlite_gradebook_into_postgres_checked() {
    let Some((url, db, _scratch)) = class_database() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gpulab.db");
    let client = student();
    let before: Value = {
        let app = spawn_with(test_config(file.clone())).await;
        for (quiz_id, right) in [("gpu-memory", 5), ("gpu-memory", 2), ("training-step", 3)] {
            let quiz = app.state.course.quiz(quiz_id).unwrap().clone();
            let response = client
                .post(format!("{}/api/quizzes/{quiz_id}/attempts", app.base))
                .json(&json_answers(&quiz, right))
                .send()
                .await
                .unwrap();
            assert!(response.status().is_success());
        }
        let queued: Value = send_json(
            client
                .post(format!("{}/api/experiments/timing?predict=3", app.base))
                .json(&json!({})),
        )
        .await;
        crate::support::jobs::wait_for_as(&app, &client, queued["job_id"].as_u64().unwrap()).await;
        json(&client, &format!("{}/me/export", app.base)).await
    };
    assert_eq!(before["attempts"].as_array().unwrap().len(), 3);
    assert_eq!(before["predictions"].as_array().unwrap().len(), 1);

    // A lab attempt and a learner's own GPU run, written as the server writes them: the
    // copy must take them too (the loop below checks every table's count).
    {
        let sqlite = rusqlite::Connection::open(&file).unwrap();
        sqlite
            .execute_batch(
                "INSERT INTO lab_attempts (student_id, lab, verdict, score, passed, backend, attempted_at)
                   VALUES ('s1', 'feed-the-gpu', 'pass', 0.875, 1, 'cpu', '2026-11-28T09:00:00.000Z');
                 INSERT INTO learner_gpu_runs (student_id, device, recorded_at_unix, imported_at, run)
                   VALUES ('s1', 'Tesla T4', 1795000000, '2026-11-28T09:01:00.000Z', '{}');",
            )
            .unwrap();
    }
    let out = copy(&file, &url);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sqlite = rusqlite::Connection::open(&file).unwrap();
    for table in gpulab::db::copy::TABLES {
        let n: i64 = sqlite
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        let line = printed
            .lines()
            .find(|l| l.split_whitespace().next() == Some(table))
            .unwrap_or_else(|| panic!("{table} in {printed}"));
        assert_eq!(
            line.split_whitespace().nth(1),
            Some(n.to_string().as_str()),
            "{table}: {printed}"
        );
        let copied: i64 = db
            .run(move |tx| {
                tx.query_row(&format!("SELECT COUNT(*) FROM {table}"), &[])?
                    .get(0)
            })
            .await
            .unwrap();
        assert_eq!(copied, n, "{table} in PostgreSQL");
        if ["lab_attempts", "learner_gpu_runs"].contains(table) {
            assert_eq!(n, 1, "{table}: the row written above");
        }
    }
    assert!(
        printed.contains("sha256") && printed.contains("equal on both sides"),
        "{printed}"
    );

    let again = copy(&file, &url);
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("already has 1 students"),
        "{again:?}"
    );

    let web = web_node(&url);
    let after: Value = json(&client, &format!("{}/me/export", web.base)).await;
    assert_eq!(
        after["attempts"], before["attempts"],
        "the same attempts, ids and times included"
    );
    assert_eq!(after["progress"], before["progress"]);
    assert_eq!(after["predictions"], before["predictions"]);
    // New rows get ids after the copied ones.
    let quiz = web_quiz();
    let response = client
        .post(format!("{}/api/quizzes/gpu-memory/attempts", web.base))
        .json(&json_answers(&quiz, 5))
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap()
    );
}

fn web_quiz() -> gpulab::course::quiz::Quiz {
    gpulab::course::Course::load(&gpulab::course::ContentSource::Embedded)
        .unwrap()
        .quiz("gpu-memory")
        .unwrap()
        .clone()
}

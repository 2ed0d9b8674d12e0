//! A full disk, simulated with SQLite's `max_page_count` (SQLite answers `SQLITE_FULL`
//! exactly as when the file system is full): writes answer 503 with `Retry-After` and
//! say nothing was saved, reading keeps working, `/readyz` and `/metrics` say the
//! database is not writable, the queue and the playground refuse new work, every
//! acknowledged attempt is stored and every stored one was acknowledged, and the server
//! recovers by itself when space returns. Also a read-only and a removed file, and the
//! same naming of PostgreSQL's `disk_full` (SQLSTATE 53100).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::quiz::{json_answers, submit};
use crate::support::{TestApp, spawn, student};
use gpulab::db::health::Unwritable;
use gpulab::db::testing::{backends, cap_sqlite_pages, make_sqlite_read_only};

const QUIZ: &str = "gpu-memory";

/// Attempts stored for each of `students`, read from the database.
async fn stored(app: &TestApp, students: &[String]) -> Vec<usize> {
    let students = students.to_vec();
    app.state
        .db
        .run(move |tx| {
            students
                .iter()
                .map(|s| {
                    tx.query_row(
                        "SELECT COUNT(*) FROM attempts WHERE student_id = ?1",
                        gpulab::params![s],
                    )?
                    .get(0)
                })
                .collect()
        })
        .await
        .unwrap()
}

/// The student id `client` carries (read back from the server).
async fn id_of(app: &TestApp, client: &reqwest::Client) -> String {
    let me: Value = client
        .get(format!("{}/api/me/progress", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    me["student_id"]
        .as_str()
        .expect("the progress names the student")
        .to_string()
}

/// `/readyz`'s status and body.
async fn readyz(app: &TestApp) -> (StatusCode, Value) {
    let response = app.get("/readyz").await;
    (response.status(), response.json().await.unwrap())
}

/// Polls `/readyz` until it answers `want` (a probe runs at most once a second); no
/// timing is asserted, only that it happens within a generous bound.
async fn readyz_until(app: &TestApp, want: StatusCode) -> Value {
    let started = Instant::now();
    loop {
        let (status, body) = readyz(app).await;
        if status == want {
            return body;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "/readyz still {status}: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn assert_nothing_saved(response: reqwest::Response, words: &str) {
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    assert!(
        retry
            .as_deref()
            .is_some_and(|s| s.parse::<u64>().is_ok_and(|s| s > 0)),
        "Retry-After: {retry:?}"
    );
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains(words) && message.contains("nothing you sent was saved"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_answers_503_keeps_reads_reports_unready_and_recovers_losing_nothing() {
    let app = spawn().await;
    let quiz = app.state.course.quiz(QUIZ).unwrap().clone();
    let answers = json_answers(&quiz, 3);
    // Students of 10 attempts each (a student may submit 20 a minute).
    let mut clients = Vec::new();
    let mut ids = Vec::new();
    let mut acknowledged = Vec::new();
    let submit_next = async |clients: &mut Vec<reqwest::Client>,
                             ids: &mut Vec<String>,
                             acknowledged: &mut Vec<usize>|
           -> reqwest::Response {
        if clients.is_empty() || acknowledged.last() == Some(&10) {
            let client = student();
            ids.push(id_of(&app, &client).await);
            clients.push(client);
            acknowledged.push(0);
        }
        let response = submit(&app, clients.last().unwrap(), QUIZ, &answers).await;
        if response.status() == StatusCode::OK {
            *acknowledged.last_mut().unwrap() += 1;
        }
        response
    };
    for _ in 0..5 {
        let ok = submit_next(&mut clients, &mut ids, &mut acknowledged).await;
        assert_eq!(ok.status(), StatusCode::OK);
    }
    assert_eq!(readyz(&app).await.0, StatusCode::OK);

    // The disk fills: a few more pages, then no more.
    cap_sqlite_pages(&app.state.db, Some(3));
    let mut refused = None;
    for _ in 0..400 {
        let response = submit_next(&mut clients, &mut ids, &mut acknowledged).await;
        match response.status() {
            StatusCode::OK => {}
            StatusCode::SERVICE_UNAVAILABLE => {
                refused = Some(response);
                break;
            }
            other => panic!("a write on a filling disk answered {other}, not 200 or 503"),
        }
    }
    let refused = refused.expect("the capped database fills up");
    assert_nothing_saved(refused, "out of disk space").await;
    for _ in 0..3 {
        let again = submit_next(&mut clients, &mut ids, &mut acknowledged).await;
        assert_nothing_saved(again, "out of disk space").await;
    }
    // The form answers the same way, as a page.
    let form = clients
        .last()
        .unwrap()
        .post(format!("{}/lessons/{QUIZ}/quiz", app.base))
        .form(&crate::support::quiz::form_answers(&quiz, true))
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(form.headers().contains_key("retry-after"));
    assert!(form.text().await.unwrap().contains("out of disk space"));

    // Reading keeps working.
    for path in ["/", "/lessons/gpu-memory", "/api/me/progress"] {
        let page = clients[0]
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(
            page.status(),
            StatusCode::OK,
            "{path} while the disk is full"
        );
    }
    // Readiness and metrics say so.
    let body = readyz_until(&app, StatusCode::SERVICE_UNAVAILABLE).await;
    assert_eq!(body["status"], "not ready");
    assert!(
        body["database"]
            .as_str()
            .unwrap()
            .contains("out of disk space"),
        "{body}"
    );
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains("gpulab_database_writable 0"), "{metrics}");
    assert!(metrics.contains("gpulab_database_state{state=\"disk_full\"} 1"));
    // The queue and the playground start nothing.
    let experiment = app
        .client
        .post(format!("{}/api/experiments/transfer", app.base))
        .json(&serde_json::json!({"max_bytes": 1 << 20}))
        .send()
        .await
        .unwrap();
    assert_eq!(experiment.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(experiment.headers().contains_key("retry-after"));
    let said: Value = experiment.json().await.unwrap();
    assert!(
        said["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Experiments are paused"),
        "{said}"
    );
    let allocation = app
        .client
        .post(format!("{}/api/playground/tensors", app.base))
        .json(&serde_json::json!({"name": "weights", "mib": 64}))
        .send()
        .await
        .unwrap();
    assert_eq!(allocation.status(), StatusCode::SERVICE_UNAVAILABLE);

    // Space returns: the server finds out by itself.
    cap_sqlite_pages(&app.state.db, None);
    let body = readyz_until(&app, StatusCode::OK).await;
    assert_eq!(body["database"], "ok");
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains("gpulab_database_writable 1"), "{metrics}");
    let ok = submit_next(&mut clients, &mut ids, &mut acknowledged).await;
    assert_eq!(ok.status(), StatusCode::OK, "writes work again");

    // What was acknowledged is stored, and nothing more.
    assert_eq!(stored(&app, &ids).await, acknowledged);
    assert!(acknowledged.iter().sum::<usize>() > 6);
}

#[tokio::test]
async fn a_read_only_database_answers_503_and_a_writable_file_is_reopened() {
    let app = spawn().await;
    let quiz = app.state.course.quiz(QUIZ).unwrap().clone();
    let client = student();
    assert_eq!(
        submit(&app, &client, QUIZ, &json_answers(&quiz, 2))
            .await
            .status(),
        StatusCode::OK
    );
    make_sqlite_read_only(&app.state.db);
    let refused = submit(&app, &client, QUIZ, &json_answers(&quiz, 2)).await;
    assert_nothing_saved(refused, "read-only").await;
    assert_eq!(
        app.state.db.health().unwritable,
        Some(Unwritable::ReadOnly),
        "the failed write set the state"
    );
    // The file itself takes writes: the probe's fresh connection does.
    readyz_until(&app, StatusCode::OK).await;
    assert_eq!(
        submit(&app, &client, QUIZ, &json_answers(&quiz, 2))
            .await
            .status(),
        StatusCode::OK
    );
    let id = id_of(&app, &client).await;
    assert_eq!(stored(&app, &[id]).await, [2]);
}

#[tokio::test]
async fn writes_to_a_removed_database_file_are_refused_until_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gpulab.db");
    let app = crate::support::spawn_with(crate::support::test_config(path.clone())).await;
    let quiz = app.state.course.quiz(QUIZ).unwrap().clone();
    let client = student();
    let answers = json_answers(&quiz, 2);
    assert_eq!(
        submit(&app, &client, QUIZ, &answers).await.status(),
        StatusCode::OK
    );

    let moved = dir.path().join("moved-away.db");
    std::fs::rename(&path, &moved).unwrap();
    let refused = submit(&app, &client, QUIZ, &answers).await;
    assert_nothing_saved(refused, "missing").await;
    let body = readyz_until(&app, StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(
        body["database"].as_str().unwrap().contains("removed"),
        "{body}"
    );
    let reading = client
        .get(format!("{}/api/me/progress", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        reading.status(),
        StatusCode::OK,
        "reads go on from the open file"
    );

    std::fs::rename(&moved, &path).unwrap();
    assert_eq!(
        submit(&app, &client, QUIZ, &answers).await.status(),
        StatusCode::OK,
        "the file is back: writes are taken again"
    );
    readyz_until(&app, StatusCode::OK).await;
    let id = id_of(&app, &client).await;
    assert_eq!(
        stored(&app, &[id]).await,
        [2],
        "the refused write was not saved"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_full_error_is_named_on_both_engines_and_cleared_by_a_probe() {
    for (engine, db, _scratch) in backends() {
        // PostgreSQL's own error for a full disk ("could not extend file …") carries
        // SQLSTATE 53100; raising that code gives the same error object without filling
        // a real disk. SQLite is capped at its size now and asked to grow.
        let postgres = engine == "postgres";
        if !postgres {
            cap_sqlite_pages(&db, Some(0));
        }
        let failed = db
            .run(move |tx| {
                if postgres {
                    tx.batch(
                        "DO $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$",
                    )
                } else {
                    tx.execute(
                        "INSERT INTO settings (key, value) VALUES ('filler', ?1)",
                        gpulab::params!["x".repeat(64 * 1024)],
                    )
                    .map(|_| ())
                }
            })
            .await
            .expect_err("the write fails");
        assert_eq!(
            failed.unwritable(),
            Some(Unwritable::DiskFull),
            "{engine}: {failed}"
        );
        assert_eq!(
            db.health().unwritable,
            Some(Unwritable::DiskFull),
            "{engine}"
        );
        let answered = axum::response::IntoResponse::into_response(gpulab::web::error::ApiError(
            failed.into(),
        ));
        assert_eq!(answered.status(), 503, "{engine}");
        assert!(answered.headers().contains_key("retry-after"), "{engine}");
        if engine == "sqlite" {
            assert!(!db.writability().await.ok(), "still full");
            cap_sqlite_pages(&db, None);
        }
        let started = Instant::now();
        while !db.writability().await.ok() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{engine}: no recovery"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

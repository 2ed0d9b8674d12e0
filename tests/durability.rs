//! Saved progress survives a restart and a crash: every attempt acknowledged with a
//! success response is in the database afterwards, even after SIGKILL mid-stream.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::support::client::{json, text};
use crate::support::quiz::json_answers;
use crate::support::quiz::submit;
use crate::support::{BinaryServer, spawn_with, student, test_config};

#[tokio::test]
async fn progress_survives_a_restart_on_the_same_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gpulab.db");
    let client = student();
    let first = spawn_with(test_config(db.clone())).await;
    let quiz = first.state.course.quiz("training-step").unwrap().clone();
    let n = quiz.questions.len();
    let ok = submit(&first, &client, "training-step", &json_answers(&quiz, n)).await;
    assert!(ok.status().is_success());
    drop(first);

    let second = spawn_with(test_config(db)).await;
    let data: Value = json(&client, &format!("{}/api/me/progress", second.base)).await;
    assert_eq!(data["progress"][0]["quiz_id"], "training-step");
    assert_eq!(data["progress"][0]["passed"], true);
    let home = text(&client, &second.base).await;
    assert!(
        home.contains("Passed · best 100% · 1 attempt"),
        "the home page shows yesterday's progress"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_a_submission_stream_loses_no_acknowledged_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("gpulab.db");
    // Rates lifted: the default 20 attempts a minute would stop the writers long before
    // the kill, and nothing would be in flight when it came.
    let unlimited = [
        "--attempts-per-minute",
        "1000000",
        "--writes-per-minute-per-address",
        "1000000",
    ];
    let server = BinaryServer::launch(&db, &unlimited, &[], &[]);
    let quiz = gpulab::course::Course::load(&gpulab::course::ContentSource::Embedded)
        .unwrap()
        .quiz("gpu-memory")
        .unwrap()
        .clone();
    let body = json_answers(&quiz, 5);
    let url = format!("{}/api/quizzes/gpu-memory/attempts", server.base);
    let client = student();
    // One identity for every writer: fetch the student cookie before the stream starts.
    client
        .get(format!("{}/api/me/progress", server.base))
        .send()
        .await
        .unwrap();
    let acknowledged = Arc::new(AtomicUsize::new(0));
    let killed = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for _ in 0..4 {
        let (client, url, body, acknowledged, killed) = (
            client.clone(),
            url.clone(),
            body.clone(),
            Arc::clone(&acknowledged),
            Arc::clone(&killed),
        );
        writers.push(tokio::spawn(async move {
            // Bounded: at most 2,000 submissions per writer, and it stops at the first
            // failure (the server has been killed).
            for _ in 0..2_000 {
                match client
                    .post(&url)
                    .json(&body)
                    .timeout(Duration::from_secs(5))
                    .send()
                    .await
                {
                    Ok(r) if r.status().is_success() => {
                        acknowledged.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(r) => return format!("answered {} before the kill", r.status()),
                    Err(_) if killed.load(Ordering::SeqCst) => return String::new(),
                    Err(e) => return format!("failed before the kill: {e}"),
                }
            }
            "sent all 2,000 before the kill".to_string()
        }));
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    killed.store(true, Ordering::SeqCst);
    server.kill_hard();
    for w in writers {
        let stopped = w.await.unwrap();
        assert!(
            stopped.is_empty(),
            "a writer was not writing when the server was killed: it {stopped}"
        );
    }
    let acked = acknowledged.load(Ordering::SeqCst);
    assert!(
        acked > 0,
        "some submissions were acknowledged before the kill"
    );

    let restarted = BinaryServer::start(&db);
    let data: Value = json(&client, &format!("{}/api/me/progress", restarted.base)).await;
    let stored = data["attempts"].as_array().unwrap().len();
    assert!(
        stored >= acked,
        "{acked} acknowledged but only {stored} stored"
    );
    assert!(
        stored <= acked + 4,
        "at most one unacknowledged commit per writer: {stored} vs {acked}"
    );
}

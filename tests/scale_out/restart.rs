//! PostgreSQL restarted under a web node and a worker: meanwhile `/readyz` says not
//! ready and writes answer 503 (saving nothing); afterwards both reconnect by
//! themselves, and every acknowledged attempt is there.

use std::time::Duration;

use serde_json::json;

use super::{OwnServer, Worker, eventually, web_node};
use crate::support::client::{json, send_json};
use crate::support::quiz::json_answers;
use crate::support::student;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_restart_answers_503_meanwhile_and_loses_no_acknowledged_write() {
    if gpulab::db::testing::postgres_server().is_none()
        && std::env::var("GPULAB_REQUIRE_POSTGRES").as_deref() != Ok("1")
    {
        eprintln!("SKIPPED: the restart test needs PostgreSQL (set GPULAB_TEST_POSTGRES)");
        return;
    }
    let server = OwnServer::start();
    let _worker = Worker::start(&server.url, "w1");
    let web = web_node(&server.url);
    let client = student();
    let quiz = gpulab::course::Course::load(&gpulab::course::ContentSource::Embedded)
        .unwrap()
        .quiz("gpu-memory")
        .unwrap()
        .clone();
    let answers = json_answers(&quiz, quiz.questions.len());
    let attempt = || {
        client
            .post(format!("{}/api/quizzes/gpu-memory/attempts", web.base))
            .json(&answers)
            .send()
    };
    let readyz = || async {
        client
            .get(format!("{}/readyz", web.base))
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    };
    assert_eq!(attempt().await.unwrap().status(), 200);
    assert_eq!(readyz().await, 200);

    server.pause();
    assert!(
        eventually(Duration::from_secs(10), || async { readyz().await == 503 }).await,
        "/readyz says not ready"
    );
    let refused = attempt().await.unwrap();
    assert_eq!(refused.status(), 503, "not a 500: the database is away");
    let body = refused.text().await.unwrap();
    assert!(
        body.contains("cannot be reached") && body.contains("Nothing you sent was saved"),
        "{body}"
    );
    let experiment = client
        .post(format!("{}/api/experiments/timing", web.base))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(experiment.status(), 503);

    server.resume();
    assert!(
        eventually(Duration::from_secs(30), || async { readyz().await == 200 }).await,
        "ready again"
    );
    assert_eq!(attempt().await.unwrap().status(), 200);
    let queued: serde_json::Value = send_json(
        client
            .post(format!("{}/api/experiments/timing", web.base))
            .json(&json!({})),
    )
    .await;
    let id = queued["job_id"].as_u64().expect("queued after the restart");
    let done = eventually(Duration::from_secs(30), || async {
        let job: serde_json::Value = json(&client, &format!("{}/api/jobs/{id}", web.base)).await;
        job["status"] == "done"
    })
    .await;
    assert!(done, "the worker reconnected and ran the job");
    let progress: serde_json::Value = json(&client, &format!("{}/api/me/progress", web.base)).await;
    assert_eq!(
        progress["progress"][0]["attempts"], 2,
        "both acknowledged attempts, none of the refused: {progress}"
    );
}

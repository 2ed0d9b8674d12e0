//! Experiments as a client runs them: post, then poll the job until it is done.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::TestApp;

/// Polls job `id` as the app's default student until it is done or failed (two minutes
/// at most); returns the job.
pub(crate) async fn wait_for(app: &TestApp, id: u64) -> Value {
    wait_for_as(app, &app.client, id).await
}

/// Polls job `id` as `client` (only a job's owner may read it).
pub(crate) async fn wait_for_as(app: &TestApp, client: &reqwest::Client, id: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let job: Value = client
            .get(format!("{}/api/jobs/{id}", app.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        match job["status"].as_str().unwrap() {
            "done" | "failed" => return job,
            "queued" => assert!(job["position"].as_u64().unwrap() >= 1),
            "running" => {}
            other => panic!("unknown status {other}"),
        }
        assert!(Instant::now() < deadline, "job {id} did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// POSTs `body` to `path` as the app's default student.
pub(crate) async fn post(app: &TestApp, path: &str, body: Value) -> reqwest::Response {
    app.client
        .post(format!("{}{path}", app.base))
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// Runs `body` at `path` to completion; asserts 202 and `done`, returns the result.
pub(crate) async fn run(app: &TestApp, path: &str, body: Value) -> Value {
    let response = post(app, path, body).await;
    assert_eq!(response.status(), reqwest::StatusCode::ACCEPTED);
    let queued: Value = response.json().await.unwrap();
    let job = wait_for(app, queued["job_id"].as_u64().unwrap()).await;
    assert_eq!(job["status"], "done", "{job}");
    job["result"].clone()
}

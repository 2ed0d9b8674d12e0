//! The per-student experiment caps are work-conserving: a learner alone with the GPU
//! runs every experiment they start (the browser walk of every widget that ran 18 in a
//! minute), on `gpulab serve` with SQLite; and on a web node sharing PostgreSQL, where
//! no worker runs so the queue stays as the test built it, a second student waiting
//! brings every cap back, with a message that says why.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::hostile::message;
use crate::support::jobs::wait_for_as;
use crate::support::{TestApp, spawn_tuned, spawn_unmeasured, student, test_config};

/// Posts a timing experiment as `client`: the status, the Retry-After and the body.
async fn start(app: &TestApp, client: &reqwest::Client) -> (StatusCode, Option<u64>, Value) {
    let response = client
        .post(format!("{}/api/experiments/timing", app.base))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    let retry = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    (status, retry, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn alone_a_learner_runs_eighteen_experiments_in_a_minute() {
    let app = spawn_tuned(|config| {
        config.limits.experiments_per_minute = 12;
        config.limits.pending_per_student = 2;
    })
    .await;
    let ann = student();
    let mut jobs = Vec::new();
    // Nine clicked one after another, each waited for, as a lesson's panels are...
    for n in 1..=9 {
        let (status, _, queued) = start(&app, &ann).await;
        assert_eq!(status, StatusCode::ACCEPTED, "experiment {n}: {queued}");
        let job = wait_for_as(&app, &ann, queued["job_id"].as_u64().unwrap()).await;
        assert_eq!(job["status"], "done", "{job}");
    }
    // ...then nine at once: past the rate and past the two that may wait.
    for n in 10..=18 {
        let (status, _, queued) = start(&app, &ann).await;
        assert_eq!(status, StatusCode::ACCEPTED, "experiment {n}: {queued}");
        jobs.push(queued["job_id"].as_u64().unwrap());
    }
    for id in jobs {
        let job = wait_for_as(&app, &ann, id).await;
        assert_eq!(job["status"], "done", "{job}");
    }
    let metrics = app.get("/metrics").await.text().await.unwrap();
    let refused = metrics
        .lines()
        .filter(|l| l.starts_with("gpulab_experiments_refused_total{"))
        .filter(|l| !l.ends_with(" 0"))
        .collect::<Vec<_>>();
    assert!(refused.is_empty(), "{refused:?}");
}

#[tokio::test]
async fn on_a_web_node_a_second_student_waiting_brings_the_caps_back() {
    // The synchronous PostgreSQL client runs a runtime of its own: off tokio's threads.
    let on_plain_thread = |f: Box<dyn FnOnce() + Send>| std::thread::spawn(f).join().unwrap();
    let Some((url, db, scratch)) = std::thread::spawn(crate::scale_out::class_database)
        .join()
        .unwrap()
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path().join("unused.db"));
    config.database = gpulab::db::Location::Postgres(url);
    config.role = gpulab::config::Role::Web;
    config.limits.experiments_per_minute = 12;
    config.limits.pending_per_student = 2;
    config.limits.pending_per_address = 64;
    config.limits.queue_length = 64;
    // Unmeasured: seeding the quizzes' measurements would block on this thread.
    let app = spawn_unmeasured(config).await;
    let (ann, bob) = (student(), student());
    for n in 1..=18 {
        let (status, _, queued) = start(&app, &ann).await;
        assert_eq!(status, StatusCode::ACCEPTED, "Ann alone, {n}: {queued}");
        assert_eq!(queued["position"], n, "{queued}");
    }
    let (status, _, queued) = start(&app, &bob).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    assert_eq!(queued["position"], 2, "Bob joins the first turn: {queued}");
    // Bob waits now: Ann's rate (this node's limiter) binds, and says why.
    let (status, retry, refused) = start(&app, &ann).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{refused}");
    assert!(retry.is_some_and(|s| (1..=60).contains(&s)), "{retry:?}");
    let text = message(&refused);
    assert!(text.contains("12 experiments in the last minute"), "{text}");
    assert!(
        text.contains("while other students' experiments are waiting"),
        "{text}"
    );
    // Bob's own caps bind too, with Ann waiting: two may wait.
    assert_eq!(start(&app, &bob).await.0, StatusCode::ACCEPTED);
    let (status, _, refused) = start(&app, &bob).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{refused}");
    assert!(
        message(&refused).contains("You already have 2 experiments waiting"),
        "{refused}"
    );
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains(r#"gpulab_experiments_refused_total{reason="rate_limited"} 1"#),
        "{metrics}"
    );
    on_plain_thread(Box::new(move || drop((db, scratch))));
}

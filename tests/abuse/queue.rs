//! Findings 3, 6, 10 and 11: clients without cookies, and one greedy student, must not
//! keep a real student's experiment from being accepted and run soon; jobs belong to
//! whoever started them.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Server, client_from, scale};
use crate::support::student_id;

/// Posts a timing experiment; the status and body.
async fn submit(client: &reqwest::Client, base: &str) -> (StatusCode, Value) {
    let response = client
        .post(format!("{base}/api/experiments/timing"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_real_student_gets_the_gpu_while_cookieless_and_greedy_clients_flood() {
    let server = Server::start(&["--experiments-per-minute", "0"]);
    let base = server.base().to_string();
    let flood_for = Duration::from_secs(scale(8, 40) as u64);
    let until = Instant::now() + flood_for;
    let mut floods = Vec::new();
    for _ in 0..4 {
        let base = base.clone();
        floods.push(tokio::spawn(async move {
            let cookieless = client_from("127.0.0.1", None);
            let mut answers = Vec::new();
            while Instant::now() < until {
                answers.push(submit(&cookieless, &base).await.0);
            }
            answers
        }));
    }
    let greedy_base = base.clone();
    let greedy = tokio::spawn(async move {
        let greedy = client_from("127.0.0.1", Some(&student_id()));
        let mut answers = Vec::new();
        while Instant::now() < until {
            answers.push(submit(&greedy, &greedy_base).await.0);
        }
        answers
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A real student, from another machine, in the middle of the flood.
    let me = client_from("127.0.0.2", Some(&student_id()));
    let (status, queued) = submit(&me, &base).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    assert!(queued["position"].as_u64().unwrap() <= 2, "{queued}");
    let id = queued["job_id"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let job: Value = me
            .get(format!("{base}/api/jobs/{id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if job["status"] == "done" {
            break;
        }
        assert_ne!(job["status"], "failed", "{job}");
        assert!(
            Instant::now() < deadline,
            "the real student's job did not run: {job}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for flood in floods {
        let answers = flood.await.unwrap();
        assert!(
            answers.iter().all(|s| *s == StatusCode::FORBIDDEN),
            "a cookieless write was accepted: {answers:?}"
        );
    }
    let greedy = greedy.await.unwrap();
    assert!(greedy.contains(&StatusCode::ACCEPTED));
    assert!(
        greedy
            .iter()
            .all(|s| [StatusCode::ACCEPTED, StatusCode::TOO_MANY_REQUESTS].contains(s)),
        "{greedy:?}"
    );
}

#[tokio::test]
async fn a_job_is_readable_only_by_its_owner_and_ids_are_not_a_sequence() {
    let server = Server::start(&[]);
    let base = server.base();
    let ann = client_from("127.0.0.1", Some(&student_id()));
    let bob = client_from("127.0.0.1", Some(&student_id()));
    let (_, first) = submit(&ann, base).await;
    let (_, second) = submit(&ann, base).await;
    let (a, b) = (
        first["job_id"].as_u64().unwrap(),
        second["job_id"].as_u64().unwrap(),
    );
    assert!(a.abs_diff(b) > 1_000, "ids {a} and {b} look sequential");
    let mine = ann
        .get(format!("{base}/api/jobs/{a}"))
        .send()
        .await
        .unwrap();
    assert_eq!(mine.status(), StatusCode::OK);
    let theirs = bob
        .get(format!("{base}/api/jobs/{a}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        theirs.status(),
        StatusCode::NOT_FOUND,
        "another student read the job"
    );
    let guess = bob
        .get(format!("{base}/api/jobs/{}", a + 1))
        .send()
        .await
        .unwrap();
    assert_eq!(guess.status(), StatusCode::NOT_FOUND);
}

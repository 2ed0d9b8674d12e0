//! A class round across web nodes: opened through one, predicted through the other, run
//! through the second and revealed to a student on the first; closed everywhere at once.
//! And a round outlives the web node that ran it: with that node killed (SIGKILL), the
//! worker that measures the round reveals it, with its own device, for the other node.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Worker, class_database, eventually, web_node_with};
use crate::support::client::json;
use crate::support::{BinaryServer, student};

/// Two web nodes of the class on `url`, and an instructor signed in on the first.
async fn two_nodes_and_an_instructor(url: &str) -> (BinaryServer, BinaryServer, reqwest::Client) {
    let token = "a-long-enough-instructor-token-for-tests-0123456789";
    let env = [("GPULAB_INSTRUCTOR_TOKEN", token)];
    let (first, second) = (web_node_with(url, &env), web_node_with(url, &env));
    let instructor = student();
    let login = instructor
        .post(format!("{}/instructor/login", first.base))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert!(login.status().is_redirection());
    (first, second, instructor)
}

/// The round as `learner` reads it through the node at `base` (`null` when none).
async fn round_seen(learner: &reqwest::Client, base: &str) -> Value {
    let body: Value = json(learner, &format!("{base}/api/round")).await;
    body["round"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_web_node_shows_the_same_class_round() {
    let Some((url, db, _scratch)) = class_database() else {
        return;
    };
    let _worker = Worker::start(&url, "w1");
    let (web1, web2, instructor) = two_nodes_and_an_instructor(&url).await;
    let opened = instructor
        .post(format!("{}/instructor/round/open", web1.base))
        .form(&[("experiment", "timing")])
        .send()
        .await
        .unwrap();
    assert!(opened.status().is_redirection(), "{}", opened.status());

    let learner = student();
    let round = |base: String| {
        let learner = learner.clone();
        async move { round_seen(&learner, &base).await }
    };
    let seen = round(web2.base.clone()).await;
    assert_eq!(
        seen["status"], "open",
        "the other web node shows the round: {seen}"
    );
    let predicted = learner
        .post(format!("{}/api/round/prediction", web2.base))
        .json(&json!({"round": seen["id"], "predicted": 4.0}))
        .send()
        .await
        .unwrap();
    assert_eq!(predicted.status(), 200);
    assert_eq!(
        round(web1.base.clone()).await["predictions"],
        1,
        "counted on the first node too"
    );

    let run = instructor
        .post(format!("{}/instructor/round/run", web2.base))
        .send()
        .await
        .unwrap();
    assert!(run.status().is_redirection(), "{}", run.status());
    let revealed = eventually(Duration::from_secs(30), || {
        let next = round(web1.base.clone());
        async move { next.await["status"] == "revealed" }
    })
    .await;
    assert!(revealed, "revealed on the node that did not run it");
    let shown = round(web1.base.clone()).await;
    assert!(
        shown["measured"].as_f64().is_some_and(|m| m > 0.0),
        "{shown}"
    );
    assert_eq!(shown["yours"], 4.0);
    assert!(shown["score"]["factor"].as_f64().is_some(), "{shown}");
    let stored: i64 = db
        .run(|tx| {
            tx.query_row(
                "SELECT COUNT(*) FROM predictions WHERE quantity LIKE 'timing.%'",
                &[],
            )?
            .get(0)
        })
        .await
        .unwrap();
    assert_eq!(
        stored, 1,
        "the prediction, scored, is in the learner's predictions"
    );

    let closed = instructor
        .post(format!("{}/instructor/round/close", web1.base))
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_redirection());
    assert_eq!(
        round(web2.base.clone()).await,
        Value::Null,
        "closed on every node"
    );
}

/// The device name `gpulab worker` `name` registered (its card, in `workers`).
async fn worker_device(db: &gpulab::db::Db, name: &str) -> String {
    let name = name.to_string();
    let card: String = db
        .run(move |tx| {
            tx.query_row(
                "SELECT device FROM workers WHERE name = ?1",
                gpulab::params![name],
            )?
            .get(0)
        })
        .await
        .unwrap();
    let card: Value = serde_json::from_str(&card).unwrap();
    card["name"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_outlives_the_web_node_that_ran_it_and_is_revealed_by_the_worker() {
    let Some((url, db, _scratch)) = class_database() else {
        return;
    };
    let (node_a, node_b, instructor) = two_nodes_and_an_instructor(&url).await;
    let learner = student();
    for (path, form) in [("open", vec![("experiment", "timing")]), ("run", vec![])] {
        let done = instructor
            .post(format!("{}/instructor/round/{path}", node_a.base))
            .form(&form)
            .send()
            .await
            .unwrap();
        assert!(done.status().is_redirection(), "{path}: {}", done.status());
        if path == "open" {
            let seen = round_seen(&learner, &node_b.base).await;
            let predicted = learner
                .post(format!("{}/api/round/prediction", node_b.base))
                .json(&json!({"round": seen["id"], "predicted": 4.0}))
                .send()
                .await
                .unwrap();
            assert_eq!(predicted.status(), 200);
        }
    }
    // No worker runs yet, so node A cannot have seen the job finish: the round's job
    // waits in the queue, naming its round, when A dies.
    let waiting: i64 = db
        .run(|tx| {
            tx.query_row(
                "SELECT COUNT(*) FROM jobs j JOIN rounds r ON r.id = j.round_id
                 WHERE j.status = 'queued' AND r.status = 'running'",
                &[],
            )?
            .get(0)
        })
        .await
        .unwrap();
    assert_eq!(waiting, 1, "the running round's job is queued");
    node_a.kill_hard();

    let _worker = Worker::start(&url, "gpu-worker-1");
    let revealed = eventually(Duration::from_secs(60), || {
        let (learner, base) = (learner.clone(), node_b.base.clone());
        async move { round_seen(&learner, &base).await["status"] == "revealed" }
    })
    .await;
    let shown = round_seen(&learner, &node_b.base).await;
    assert!(revealed, "revealed with its web node dead: {shown}");
    assert!(
        shown["measured"].as_f64().is_some_and(|m| m > 0.0),
        "{shown}"
    );
    let device = worker_device(&db, "gpu-worker-1").await;
    let (round_device, scored_device): (String, String) = db
        .run(|tx| {
            let round = tx.query_row("SELECT device FROM rounds WHERE status = 'revealed'", &[])?;
            let scored = tx.query_row(
                "SELECT device FROM predictions WHERE quantity LIKE 'timing.%'",
                &[],
            )?;
            Ok((round.get(0)?, scored.get(0)?))
        })
        .await
        .unwrap();
    assert_eq!(
        (round_device.as_str(), scored_device.as_str()),
        (device.as_str(), device.as_str()),
        "the round and the scored prediction name the worker's device"
    );
}

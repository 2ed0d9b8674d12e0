//! A student's allocator playground lives in one worker: allocated through one web node,
//! it is the same through the other; when its worker dies, the next request starts an
//! empty playground on the worker still serving.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Worker, class_database, web_node};
use crate::support::client::{json, send_json};
use crate::support::student;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_playground_lives_in_one_worker_and_every_web_node_reaches_it() {
    let Some((url, db, _scratch)) = class_database() else {
        return;
    };
    let workers = [Worker::start(&url, "w1"), Worker::start(&url, "w2")];
    let (web1, web2) = (web_node(&url), web_node(&url));
    let client = student();
    let allocated: Value = send_json(
        client
            .post(format!("{}/api/playground/tensors", web1.base))
            .json(&json!({"name": "weights", "mib": 2})),
    )
    .await;
    assert_eq!(
        allocated["pool"]["tensors"]["weights"],
        2 * 1024 * 1024,
        "{allocated}"
    );
    let seen: Value = json(&client, &format!("{}/api/playground", web2.base)).await;
    assert_eq!(
        seen["pool"], allocated["pool"],
        "the other web node reaches the same playground"
    );
    let missing = client
        .delete(format!("{}/api/playground/tensors/nope", web2.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        missing.status(),
        422,
        "a worker's refusal comes back as the same 422"
    );

    let owners = db
        .run(|tx| tx.query("SELECT student, worker FROM playground_owners", &[]))
        .await
        .unwrap();
    assert_eq!(owners.len(), 1, "one owner for the one student");
    let owner: String = owners[0].get(1).unwrap();
    let [w1, w2] = workers;
    let survivor = if owner == w1.name {
        w1.kill_hard();
        w2
    } else {
        w2.kill_hard();
        w1
    };
    // The dead worker stops counting as live after a few seconds without a heartbeat.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let after: Value = json(&client, &format!("{}/api/playground", web1.base)).await;
    assert_eq!(
        after["pool"]["tensors"],
        json!({}),
        "a fresh playground on the worker still serving: {after}"
    );
    let moved: String = db
        .run(|tx| {
            tx.query_row("SELECT worker FROM playground_owners", &[])?
                .get(0)
        })
        .await
        .unwrap();
    assert_eq!(moved, survivor.name);
}

//! The experiment history is in the database: written before a result is readable, shown
//! live to the instructor, and still there after a restart.

use serde_json::{Value, json};

use super::TOKEN;
use crate::support::jobs::run;
use crate::support::{spawn_with, test_config};

async fn live(base: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{base}/instructor/live.json"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn experiment_history_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = || {
        let mut config = test_config(dir.path().join("gpulab.db"));
        config.instructor_token = Some(TOKEN.into());
        config
    };
    let first = spawn_with(config()).await;
    run(&first, "/api/experiments/precision", json!({"size": 128})).await;
    let view = live(&first.base).await;
    let recent = &view["recent"][0];
    assert_eq!(recent["experiment"], "precision", "{view}");
    assert_eq!(recent["outcome"], "ok");
    assert!(recent["params"].as_str().unwrap().contains("128"));
    assert!(
        recent["name"].as_str().unwrap().starts_with("anonymous s-"),
        "a pseudonym, never the id"
    );
    assert_eq!(view["gpu_use"][0]["done"], 1);
    assert!(view["queue"]["done"].as_u64().unwrap() >= 1);
    let owner: String = first
        .state
        .db
        .run(|tx| {
            tx.query_row("SELECT student_id FROM experiment_runs", gpulab::params![])?
                .get(0)
        })
        .await
        .unwrap();
    assert!(
        !view.to_string().contains(&owner),
        "the student's id (their cookie) never leaves"
    );
    let device = view["device"].as_str().unwrap().to_string();
    assert_eq!(
        recent["device"].as_str().unwrap(),
        format!("{device} ({})", view["backend"].as_str().unwrap())
    );
    drop(first);

    let second = spawn_with(config()).await;
    let view = live(&second.base).await;
    assert_eq!(
        view["recent"][0]["experiment"], "precision",
        "kept across the restart: {view}"
    );
    assert_eq!(view["gpu_use"][0]["done"], 1);
    assert_eq!(
        view["queue"]["done"], 0,
        "the queue's own figures start again"
    );
    let page = reqwest::Client::new()
        .get(format!("{}/instructor", second.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("data-live-url=\"/instructor/live.json\"")
            && page.contains("<td>precision</td>")
    );
}

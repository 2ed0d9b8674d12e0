//! A web node measures nothing, so its device card shows the ceilings a live `gpulab
//! worker` measured at its start (issue 27 §3), and none once that worker is gone.

use std::time::Duration;

use serde_json::Value;

use super::{Worker, class_database, eventually, web_node};
use crate::support::client::json;
use crate::support::student;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_node_shows_the_ceilings_a_live_worker_measured() {
    let Some((url, _db, _scratch)) = class_database() else {
        return;
    };
    let worker = Worker::start(&url, "calibrated");
    let web = web_node(&url);
    let client = student();
    let device: Value = json(&client, &format!("{}/api/device", web.base)).await;
    let ceilings = &device["ceilings"];
    assert_eq!(ceilings["backend"], "cpu", "{device}");
    let keys: Vec<&str> = ceilings["figures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["memcpy", "sgemm"], "{ceilings}");
    assert!(ceilings["figures"][0]["value"].as_f64().unwrap() > 0.0);
    worker.kill_hard();
    let gone = eventually(Duration::from_secs(10), || {
        let (client, url) = (client.clone(), format!("{}/api/device", web.base));
        async move { json(&client, &url).await["ceilings"].is_null() }
    })
    .await;
    assert!(gone, "a dead worker's ceilings are not shown");
}

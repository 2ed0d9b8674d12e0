//! A class round across web nodes: opened through one, predicted through the other, run
//! through the second and revealed to a student on the first; closed everywhere at once.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Worker, class_database, eventually, web_node_with};
use crate::support::client::json;
use crate::support::student;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_web_node_shows_the_same_class_round() {
    let Some((url, db, _scratch)) = class_database() else {
        return;
    };
    let token = "a-long-enough-instructor-token-for-tests-0123456789";
    let env = [("GPULAB_INSTRUCTOR_TOKEN", token)];
    let _worker = Worker::start(&url, "w1");
    let (web1, web2) = (web_node_with(&url, &env), web_node_with(&url, &env));
    let instructor = student();
    let login = instructor
        .post(format!("{}/instructor/login", web1.base))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert!(login.status().is_redirection());
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
        async move {
            let body: Value = json(&learner, &format!("{base}/api/round")).await;
            body["round"].clone()
        }
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

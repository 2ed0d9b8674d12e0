//! A class round under load (issue 14): the instructor opens a round, 200 simulated
//! students on loopback (each its own cookie, all polling as their pages do) predict,
//! the instructor runs it once, and every student sees the reveal with their own
//! prediction scored against the one measurement; no request fails and no prediction
//! is lost (each is in the database, copied into the learners' predictions). A late
//! prediction is refused with a clear 409. `ROUND_STUDENTS` sets the class size.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::client::instructor_page;
use crate::support::{spawn_with, student, test_config};

const TOKEN: &str = "class-round-token-0123456789abcdef";

async fn instructor_post(base: &str, path: &str, form: &[(&str, &str)]) -> reqwest::StatusCode {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{base}{path}"))
        .bearer_auth(TOKEN)
        .form(form)
        .send()
        .await
        .unwrap()
        .status()
}

async fn round(client: &reqwest::Client, base: &str) -> Value {
    let response = client
        .get(format!("{base}/api/round"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "polling never fails");
    response.json::<Value>().await.unwrap()["round"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_students_predict_and_all_see_the_reveal_together() {
    let students: usize = std::env::var("ROUND_STUDENTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path().join("gpulab.db"));
    config.instructor_token = Some(TOKEN.into());
    let app = spawn_with(config).await;
    let base = app.base.clone();

    let nobody = student();
    assert!(
        round(&nobody, &base).await.is_null(),
        "no round until the instructor opens one"
    );
    assert_eq!(
        instructor_post(&base, "/instructor/round/open", &[("experiment", "timing")]).await,
        303
    );
    let opened = round(&nobody, &base).await;
    assert_eq!(opened["status"], "open");
    assert_eq!(
        opened["question"]["quantity"],
        "timing.underestimate_factor"
    );
    let id = opened["id"].as_i64().unwrap();

    // Without the page's cookie a prediction is refused like every other write, and a
    // malformed body gets a 400; neither is counted.
    let bare = crate::support::new_browser()
        .post(format!("{base}/api/round/prediction"))
        .json(&json!({"round": id, "predicted": 3.0}))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 403);
    let malformed = nobody
        .post(format!("{base}/api/round/prediction"))
        .header("content-type", "application/json")
        .body("{\"round\": \"x\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);
    let refused: Value = malformed.json().await.unwrap();
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("expected {\"round\": id, \"predicted\": number}"),
        "{message}"
    );
    assert_eq!(round(&nobody, &base).await["predictions"], 0);

    // Every student predicts (a different value each), concurrently.
    let clients: Vec<reqwest::Client> = (0..students).map(|_| student()).collect();
    let tasks: Vec<_> = clients
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, client)| {
            let base = base.clone();
            tokio::spawn(async move {
                let client = &client;
                assert_eq!(round(client, &base).await["status"], "open");
                let predicted = 1.0 + i as f64 / 10.0;
                let response = client
                    .post(format!("{base}/api/round/prediction"))
                    .json(&json!({"round": id, "predicted": predicted}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(
                    response.status(),
                    200,
                    "student {i}: {}",
                    response.text().await.unwrap()
                );
                let body: Value = response.json().await.unwrap();
                assert_eq!(body["round"]["yours"].as_f64(), Some(predicted));
                predicted
            })
        })
        .collect();
    let mut sent = Vec::new();
    for task in tasks {
        sent.push(task.await.unwrap());
    }
    assert_eq!(
        round(&nobody, &base).await["predictions"].as_u64(),
        Some(students as u64)
    );

    // The instructor runs it once; every student polls (as class-round.js does) until
    // their page reveals it.
    let started = Instant::now();
    assert_eq!(
        instructor_post(&base, "/instructor/round/run", &[]).await,
        303
    );
    let late = clients[0]
        .post(format!("{base}/api/round/prediction"))
        .json(&json!({"round": id, "predicted": 5.0}))
        .send()
        .await
        .unwrap();
    assert_eq!(late.status(), 409, "predictions close when the run starts");
    assert!(
        late.text()
            .await
            .unwrap()
            .contains("takes no more predictions")
    );
    let tasks: Vec<_> = clients
        .iter()
        .cloned()
        .zip(sent.iter().copied())
        .map(|(client, predicted)| {
            let base = base.clone();
            tokio::spawn(async move {
                let (client, predicted) = (&client, &predicted);
                let deadline = Instant::now() + Duration::from_secs(120);
                loop {
                    let r = round(client, &base).await;
                    match r["status"].as_str().unwrap() {
                        "revealed" => {
                            assert_eq!(r["score"]["predicted"].as_f64(), Some(*predicted));
                            return r["measured"].as_f64().unwrap();
                        }
                        "running" => {}
                        other => panic!("round went {other}: {r}"),
                    }
                    assert!(Instant::now() < deadline, "no reveal within two minutes");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            })
        })
        .collect();
    let mut reveals = Vec::new();
    for task in tasks {
        reveals.push(task.await.unwrap());
    }
    let measured = reveals[0];
    assert!(measured > 0.0);
    assert!(
        reveals.iter().all(|m| *m == measured),
        "one measurement for the whole class"
    );
    eprintln!(
        "class round: {students} students predicted, revealed to all {:.1} s after the run started",
        started.elapsed().as_secs_f64()
    );

    // Nothing lost: every prediction is in the round and in the learners' predictions.
    let (in_round, revealed): (i64, i64) = app
        .state
        .db
        .run(move |tx| {
            Ok((
                tx.query_row("SELECT COUNT(*) FROM round_predictions WHERE round_id = ?1", gpulab::params![id])?.get(0)?,
                tx.query_row("SELECT COUNT(*) FROM predictions WHERE quantity = 'timing.underestimate_factor'", gpulab::params![])?.get(0)?,
            ))
        })
        .await
        .unwrap();
    assert_eq!((in_round, revealed), (students as i64, students as i64));
    let page = instructor_page(&app, TOKEN, "/instructor").await;
    assert!(
        page.contains("(revealed)"),
        "the instructor page shows the revealed round"
    );
    assert_eq!(
        page.matches("class=\"strip-dot\"").count(),
        students,
        "one dot per prediction"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_opens_a_tuning_lab_with_its_known_good_settings() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path().join("gpulab.db"));
    config.instructor_token = Some(TOKEN.into());
    let app = spawn_with(config).await;
    let base = app.base.clone();
    let page = instructor_page(&app, TOKEN, "/instructor").await;
    assert!(
        page.contains("<option value=\"lab/stop-waiting\">Tuning lab: Stop waiting on the loss (its known-good settings)</option>"),
        "each lab is a round choice"
    );
    assert!(!page.contains("<option value=\"lab\">"), "not the bare lab");
    for (bad, why) in [
        ("lab", "choose which tuning lab"),
        ("lab/nope", "no tuning lab called `nope`"),
    ] {
        let response = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .post(format!("{base}/instructor/round/open"))
            .bearer_auth(TOKEN)
            .form(&[("experiment", bad)])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 422, "{bad}");
        assert!(response.text().await.unwrap().contains(why), "{bad}");
    }
    assert_eq!(
        instructor_post(
            &base,
            "/instructor/round/open",
            &[("experiment", "lab/stop-waiting")]
        )
        .await,
        303
    );
    let learner = student();
    let opened = round(&learner, &base).await;
    assert_eq!(opened["experiment"], "lab");
    assert_eq!(opened["params"]["lab"], "stop-waiting");
    assert_eq!(
        opened["params"]["log_every"], 50,
        "the lab's known-good settings"
    );
    assert_eq!(opened["question"]["quantity"], "lab.speedup");
    let title = opened["title"].as_str().unwrap();
    assert!(
        title.starts_with("Tuning lab “Stop waiting on the loss” with the loss read every 50 steps, a sync before the step timer"),
        "{title}"
    );
    let id = opened["id"].as_i64().unwrap();
    let response = learner
        .post(format!("{base}/api/round/prediction"))
        .json(&json!({"round": id, "predicted": 1.5}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        instructor_post(&base, "/instructor/round/run", &[]).await,
        303
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    let revealed = loop {
        let r = round(&learner, &base).await;
        match r["status"].as_str().unwrap() {
            "revealed" => break r,
            "open" | "running" => {}
            other => panic!("round went {other}: {r}"),
        }
        assert!(Instant::now() < deadline, "no reveal within two minutes");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The measured speed-up is the known-good settings' samples/s over the slow loop's.
    let measured = revealed["measured"].as_f64().unwrap();
    assert!(measured.is_finite() && measured > 0.0, "{revealed}");
    assert_eq!(revealed["score"]["predicted"].as_f64(), Some(1.5));
}

//! Predict, then measure (issue 14) from the outside: a prediction travels with the job
//! (`?predict=`), the result carries the measured value and the server's score, the row
//! is in the database before the result is readable, the learner's home page shows
//! their calibration, the export carries the predictions, the instructor sees the
//! class's strip and downloads the CSV, and bad predictions get clear 4xx answers.

use serde_json::{Value, json};

use crate::support::client::{self, instructor_csv, instructor_page};
use crate::support::jobs::{post, run};
use crate::support::{spawn_with, test_config};

const TOKEN: &str = "predictions-test-token-0123456789";

#[tokio::test]
async fn a_prediction_is_scored_stored_and_shown_to_learner_and_instructor() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path().join("gpulab.db"));
    config.instructor_token = Some(TOKEN.into());
    let app = spawn_with(config).await;

    // Timing on the CPU backend: the quantity asked on either backend.
    let result = run(&app, "/api/experiments/timing?predict=2", json!({})).await;
    let measured = &result["measured"];
    assert_eq!(
        measured["quantity"], "timing.underestimate_factor",
        "{result}"
    );
    let value = measured["value"].as_f64().unwrap();
    assert_eq!(
        value,
        result["underestimate_factor"].as_f64().unwrap(),
        "the measured value is the result's own"
    );
    let score = &result["prediction"];
    assert_eq!(score["predicted"], 2.0);
    let factor = score["factor"].as_f64().unwrap();
    let expected = 2f64.max(value) / 2f64.min(value);
    assert!((factor - expected).abs() < 1e-9, "{score}");
    assert_eq!(score["direction"], if value > 2.0 { "low" } else { "high" });

    // A run without a prediction measures but scores nothing.
    let plain = run(&app, "/api/experiments/timing", json!({})).await;
    assert!(
        plain["measured"].is_object() && plain["prediction"].is_null(),
        "{plain}"
    );

    // Stored before the result was readable: the export has it, with the device.
    let export = client::json(&app.client, &format!("{}/api/me/progress", app.base)).await;
    let stored = export["predictions"].as_array().unwrap();
    assert_eq!(stored.len(), 1, "{export}");
    assert_eq!(stored[0]["predicted"], 2.0);
    assert_eq!(stored[0]["measured"].as_f64().unwrap(), value);
    assert_eq!(stored[0]["backend"], "cpu");
    assert!(!stored[0]["device"].as_str().unwrap().is_empty());

    // The home page shows the calibration with a link to the lesson's explanation.
    let home = client::text(&app.client, &format!("{}/", app.base)).await;
    assert!(home.contains("1 made"), "calibration on the home page");
    let within = (factor <= 2.0) as usize;
    assert!(
        home.contains(&format!("{within} within 2×")),
        "{}",
        &home[home.find("Your predictions").unwrap()..][..400]
    );

    // The instructor: a strip per question and the CSV, by pseudonym.
    let page = instructor_page(&app, TOKEN, "/instructor").await;
    assert!(page.contains("id=\"predictions\""));
    assert!(
        page.contains("class=\"strip-dot\""),
        "one dot per prediction"
    );
    let csv = instructor_csv(&app, TOKEN, "predictions.csv").await;
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("student,display_name,experiment,quantity")
    );
    let row = lines.next().unwrap();
    assert!(
        row.contains(",timing,timing.underestimate_factor,"),
        "{row}"
    );
    assert!(
        !csv.contains(&export["student_id"].as_str().unwrap().to_string()),
        "never the cookie id"
    );
    assert_eq!(lines.next(), None);
}

#[tokio::test]
async fn each_experiment_measures_its_question_on_the_cpu_backend() {
    let app = crate::support::spawn().await;
    let device = client::json(&app.client, &format!("{}/api/device", app.base)).await;
    for experiment in device["experiments"].as_array().unwrap() {
        let questions = experiment["predictions"].as_array().unwrap();
        assert!(
            !questions.is_empty(),
            "{} asks a question",
            experiment["name"]
        );
        for q in questions {
            assert!(!q["question"].as_str().unwrap().is_empty());
            assert!(q["href"].as_str().unwrap().starts_with("/lessons/"));
        }
    }
    // The quick ones, with a prediction each: the score always comes back.
    for (path, body, quantity) in [
        (
            "/api/experiments/matmul?predict=100",
            json!({"max_size": 128}),
            "matmul.cpu_gflops",
        ),
        (
            "/api/experiments/transfer?predict=5",
            json!({"max_bytes": 1048576}),
            "transfer.memcpy_gbps",
        ),
        (
            "/api/experiments/precision?predict=0.001",
            json!({"size": 64}),
            "precision.bf16_rel_error",
        ),
        (
            "/api/experiments/break-it?predict=1",
            json!({"case": "batch-on-host"}),
            "break-it.fails",
        ),
    ] {
        let result = run(&app, path, body).await;
        assert_eq!(result["measured"]["quantity"], quantity, "{path}: {result}");
        assert!(result["measured"]["value"].as_f64().unwrap().is_finite());
        assert!(
            result["prediction"]["verdict"].is_string(),
            "{path}: {result}"
        );
    }
}

#[tokio::test]
async fn bad_predictions_are_refused_with_a_clear_message() {
    let app = crate::support::spawn().await;
    for (query, status, words) in [
        ("predict=fast", 422, "must be a number"),
        ("predict=-3", 422, "from 0 to"),
        ("predict=1e99", 422, "from 0 to"),
        ("predict=NaN", 422, "from 0 to"),
        ("guess=3", 400, "unknown query parameter `guess`"),
    ] {
        let response = post(&app, &format!("/api/experiments/timing?{query}"), json!({})).await;
        assert_eq!(response.status().as_u16(), status, "{query}");
        let body: Value = response.json().await.unwrap();
        let message = body["error"]["message"]
            .as_str()
            .or(body["message"].as_str())
            .unwrap_or_default()
            .to_string();
        assert!(
            message.contains(words) || body.to_string().contains(words),
            "{query}: {body}"
        );
    }
}

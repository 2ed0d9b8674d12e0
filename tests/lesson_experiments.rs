//! The precision shoot-out and lesson 9's break-it runs over HTTP, on whatever backend
//! this machine has (the CPU in CI): result shapes, sane values, provenance, and 422s
//! for sizes above the cap or unknown cases.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::hostile::message;
use crate::support::jobs::{post, run};
use crate::support::spawn;

#[tokio::test]
async fn the_precision_shoot_out_reports_speed_and_error_per_format() {
    let app = spawn().await;
    let result = run(&app, "/api/experiments/precision", json!({"size": 128})).await;
    assert_eq!(result["size"], 128);
    assert_eq!(result["reference"], "fp64");
    let rows = result["rows"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["precision"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fp32", "tf32", "fp16", "bf16"]);
    let error = |name: &str| {
        rows.iter().find(|r| r["precision"] == name).unwrap()["max_abs_error"]
            .as_f64()
            .unwrap()
    };
    assert!(error("fp32") < error("bf16"), "{result}");
    for row in rows {
        assert!(row["tflops"].as_f64().unwrap() > 0.0);
        assert!(row["ms"]["median"].as_f64().unwrap() > 0.0);
    }
    let backend = result["provenance"]["backend"].as_str().unwrap();
    assert!(
        result["provenance"]["method"]
            .as_str()
            .unwrap()
            .contains("FP64")
    );
    if backend == "cpu" {
        assert_eq!(rows[2]["emulated"], true);
    }

    let cap = app.state.engine.limits.max_matmul_size;
    for body in [
        json!({"size": cap + 1}),
        json!({"size": 8}),
        json!({"size": "big"}),
    ] {
        let status = post(&app, "/api/experiments/precision", body.clone())
            .await
            .status();
        assert!(status.is_client_error(), "{body} → {status}");
    }
}

#[tokio::test]
async fn break_it_batch_on_host_runs_the_preflight() {
    let app = spawn().await;
    let result = run(
        &app,
        "/api/experiments/break-it",
        json!({"case": "batch-on-host"}),
    )
    .await;
    assert_eq!(result["case"], "batch-on-host");
    let fields = result["fields"].as_array().unwrap();
    let names: Vec<&str> = fields.iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["fc1.weight", "fc2.weight", "features", "labels"]);
    assert!(
        result["pytorch_error"]
            .as_str()
            .unwrap()
            .contains("same device")
    );
    if result["model_device"] == "cpu" {
        assert!(result["preflight_error"].is_null());
    } else {
        let message = result["preflight_error"].as_str().unwrap();
        assert!(message.contains("'features'") && message.contains("to_device"));
    }

    let bad = post(
        &app,
        "/api/experiments/break-it",
        json!({"case": "unplug-the-gpu"}),
    )
    .await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = bad.json().await.unwrap();
    assert!(message(&body).contains("batch-on-host"));
}

#[tokio::test]
async fn break_it_log_every_step_compares_two_logging_styles() {
    let app = spawn().await;
    let result = run(
        &app,
        "/api/experiments/break-it",
        json!({"case": "log-every-step"}),
    )
    .await;
    let runs = result["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["log_every"], 1);
    assert_eq!(runs[1]["log_every"], 50);
    assert_eq!(runs[0]["loss_reads"], 100);
    assert_eq!(runs[1]["loss_reads"], 2);
    let speed = |i: usize| runs[i]["samples_per_sec"].as_f64().unwrap();
    assert!(speed(0) > 0.0 && speed(1) > 0.0);
    let slowdown = result["slowdown"].as_f64().unwrap();
    let median = |i: usize| runs[i]["step_ms"]["median"].as_f64().unwrap();
    assert!((slowdown - median(0) / median(1)).abs() < 1e-9);
    assert!((slowdown - speed(1) / speed(0)).abs() < 1e-6);
}

#[tokio::test]
async fn the_streams_pipeline_compares_runs_and_checks_their_outputs() {
    let app = spawn().await;
    let body = json!({"chunks": 4, "chunk_mib": 1, "streams": 2});
    let result = run(&app, "/api/experiments/streams", body).await;
    let runs = result["runs"].as_array().unwrap();
    let cpu = result["provenance"]["backend"] == "cpu";
    // 1 and 2 streams, plus the pageable run on a GPU.
    assert_eq!(runs.len(), if cpu { 2 } else { 3 }, "{result}");
    assert_eq!(runs[0]["streams"], 1);
    assert_eq!(runs[0]["speedup"], 1.0);
    for run in runs {
        assert!(run["total_ms"]["median"].as_f64().unwrap() > 0.0, "{run}");
    }
    assert_eq!(result["outputs_match"], true);
    assert_eq!(
        result["timeline"].as_array().unwrap().len(),
        12,
        "3 steps × 4 chunks"
    );
    assert_eq!(result["chunk_bytes"], 1 << 20);
    assert!(
        result["provenance"]["method"]
            .as_str()
            .unwrap()
            .contains("round-robin")
    );
    let too_much = json!({"chunks": 32, "chunk_mib": 1024, "streams": 2});
    let refused = post(&app, "/api/experiments/streams", too_much).await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

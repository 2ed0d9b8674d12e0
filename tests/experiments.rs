//! The experiment API on whatever backend this machine has (the CPU in CI): the device
//! card and doctor shapes, a transfer job from queue to result, caps and bad input as
//! 4xx (a missing field takes its default; an unknown one is named), and a full queue
//! as 429 with Retry-After.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::client::send_json;
use crate::support::hostile::message;
use crate::support::jobs::{post, wait_for};
use crate::support::{spawn, spawn_tuned};

#[tokio::test]
async fn the_device_card_and_doctor_describe_this_machine() {
    let app = spawn().await;
    let card: Value = app.get("/api/device").await.json().await.unwrap();
    let kind = card["device"]["kind"].as_str().unwrap();
    assert!(kind == "cpu" || kind == "cuda");
    assert!(card["device"]["cpu"]["logical_cores"].as_u64().unwrap() >= 1);
    assert!(!card["device"]["name"].as_str().unwrap().is_empty());
    let limits = &app.state.engine.limits;
    assert_eq!(
        card["limits"]["max_transfer_bytes"],
        limits.max_transfer_bytes
    );
    assert_eq!(card["limits"]["max_hidden"], limits.max_hidden);
    let doctor: Value = app.get("/api/doctor").await.json().await.unwrap();
    let layers = doctor["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 7);
    assert_eq!(doctor["backend"], kind);
    for layer in layers {
        assert!(["ok", "failed", "skipped"].contains(&layer["status"].as_str().unwrap()));
    }
}

#[tokio::test]
async fn a_transfer_job_runs_and_reports_bandwidth_with_provenance() {
    let app = spawn().await;
    let response = post(
        &app,
        "/api/experiments/transfer",
        json!({"max_bytes": 1 << 20}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let queued: Value = response.json().await.unwrap();
    assert!(queued["position"].as_u64().unwrap() >= 1);
    let job = wait_for(&app, queued["job_id"].as_u64().unwrap()).await;
    assert_eq!(job["status"], "done", "{job}");
    let result = &job["result"];
    let points = result["points"].as_array().unwrap();
    assert_eq!(
        points.len(),
        gpulab::experiments::transfer::sizes(1 << 20).len()
            * if app.state.engine.card.kind.is_cuda() {
                4
            } else {
                1
            }
    );
    for p in points {
        let g = &p["gbps"];
        assert!(g["median"].as_f64().unwrap() > 0.0, "{p}");
        assert!(g["min"].as_f64().unwrap() <= g["median"].as_f64().unwrap());
    }
    assert_eq!(
        result["provenance"]["backend"],
        app.state.engine.card.kind.name()
    );
    assert!(
        result["provenance"]["method"]
            .as_str()
            .unwrap()
            .contains("median")
    );
}

#[tokio::test]
async fn caps_and_bad_parameters_get_a_clear_4xx() {
    let app = spawn().await;
    let cap = app.state.engine.limits.max_transfer_bytes;
    for (body, status, expected) in [
        (
            json!({"max_bytes": cap + 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "cap",
        ),
        (
            json!({"max_bytes": 10}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "between",
        ),
        (
            json!({"max_bytes": -5}),
            StatusCode::BAD_REQUEST,
            "must be JSON",
        ),
        (
            json!({"max_bytes": "big"}),
            StatusCode::BAD_REQUEST,
            "must be JSON",
        ),
        (
            json!({"max_bytes": 4096, "extra": true}),
            StatusCode::BAD_REQUEST,
            "unknown field",
        ),
    ] {
        let response = post(&app, "/api/experiments/transfer", body.clone()).await;
        assert_eq!(response.status(), status, "{body}");
        let error: Value = response.json().await.unwrap();
        assert!(message(&error).contains(expected), "{body}: {error}");
    }
    assert_eq!(
        app.get("/api/jobs/123456").await.status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.get("/api/jobs/abc").await.status(),
        StatusCode::BAD_REQUEST
    );
}

#[tokio::test]
async fn a_missing_field_takes_its_default_and_an_unknown_one_is_named() {
    // The default transfer (1 GiB) is above this server's cap: a body that leaves it
    // out runs at the cap (a default is never refused); one that asks for it is refused.
    let app = spawn_tuned(|config| config.limits.max_transfer_bytes = 64 << 20).await;
    let transfer = format!("{}/api/experiments/transfer", app.base);
    for body in ["", "{}", " \n"] {
        let response = app.client.post(&transfer).body(body).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::ACCEPTED, "{body:?}");
        let id = response.json::<Value>().await.unwrap()["job_id"]
            .as_u64()
            .unwrap();
        let job = wait_for(&app, id).await;
        assert_eq!(job["status"], "done", "{body:?}: {job}");
        let largest = job["result"]["points"]
            .as_array()
            .and_then(|points| points.iter().filter_map(|p| p["bytes"].as_u64()).max());
        assert_eq!(largest, Some(64 << 20), "{body:?}: the default, capped");
    }
    let response = post(
        &app,
        "/api/experiments/transfer",
        json!({"max_bytes": 1u64 << 30}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let error: Value = response.json().await.unwrap();
    let text = message(&error);
    assert!(
        text.contains("max_bytes") && text.contains("this server's cap"),
        "{text}"
    );
    // A partial body: the fields given, every other its default.
    for (path, body) in [
        ("/api/experiments/transfer", json!({"max_bytes": 1 << 20})),
        ("/api/experiments/training", json!({"steps": 20})),
    ] {
        let response = post(&app, path, body.clone()).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "{path} {body}");
        let id = response.json::<Value>().await.unwrap()["job_id"]
            .as_u64()
            .unwrap();
        let job = wait_for(&app, id).await;
        assert_eq!(job["status"], "done", "{path} {body}: {job}");
    }
    for (body, expected) in [
        (
            json!({"max_bytes": 1 << 20, "warp_size": 32}),
            "unknown field `warp_size`",
        ),
        (json!({"warp_size": 32}), "unknown field `warp_size`"),
        (json!({"max_bytes": "big"}), "invalid type"),
    ] {
        let response = post(&app, "/api/experiments/transfer", body.clone()).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let error: Value = response.json().await.unwrap();
        assert!(message(&error).contains(expected), "{body}: {error}");
    }
}

#[tokio::test]
async fn a_full_queue_answers_429_with_retry_after() {
    let app = spawn_tuned(|config| config.limits.queue_length = 1).await;
    let body = json!({"max_bytes": 64 << 20});
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..4 {
        let response = post(&app, "/api/experiments/transfer", body.clone()).await;
        statuses.push(response.status());
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            retry_after = response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_string());
            let error: Value = response.json().await.unwrap();
            assert!(message(&error).contains("queue is full"));
        }
    }
    assert!(
        statuses.contains(&StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
    assert!(retry_after.unwrap().parse::<u64>().unwrap() >= 1);
}

#[tokio::test]
async fn matmul_and_timing_jobs_return_real_measurements() {
    let app = spawn().await;
    let matmul = post(&app, "/api/experiments/matmul", json!({"max_size": 128})).await;
    assert_eq!(matmul.status(), StatusCode::ACCEPTED);
    let id = matmul.json::<Value>().await.unwrap()["job_id"]
        .as_u64()
        .unwrap();
    let timing = post(&app, "/api/experiments/timing", json!({})).await;
    assert_eq!(timing.status(), StatusCode::ACCEPTED);
    let timing_id = timing.json::<Value>().await.unwrap()["job_id"]
        .as_u64()
        .unwrap();

    let job = wait_for(&app, id).await;
    assert_eq!(job["status"], "done", "{job}");
    let rows = job["result"]["rows"].as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["size"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![16, 32, 64, 128]
    );
    for r in rows {
        assert!(r["cpu_ms"]["median"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(
            r["flop"].as_f64().unwrap(),
            2.0 * r["size"].as_f64().unwrap().powi(3)
        );
    }

    let job = wait_for(&app, timing_id).await;
    assert_eq!(job["status"], "done", "{job}");
    let r = &job["result"];
    assert_eq!(r["cpu_lane"].as_array().unwrap().len(), 8);
    assert_eq!(r["device_lane"].as_array().unwrap().len(), 8);
    assert!(r["host_sync_ms"].as_f64().unwrap() > r["host_no_sync_ms"].as_f64().unwrap());
    assert!(
        r["provenance"]["method"]
            .as_str()
            .unwrap()
            .contains("synchronising")
    );

    let too_big = post(
        &app,
        "/api/experiments/matmul",
        json!({"max_size": 1 << 20}),
    )
    .await;
    assert_eq!(too_big.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let junk = post(&app, "/api/experiments/timing", json!({"steps": 3})).await;
    assert_eq!(junk.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_device_card_carries_this_devices_ceilings_measured_before_the_first_job() {
    let app = spawn().await;
    let body = json!({"batch": 8, "hidden": 16, "steps": 5, "log_every": 5});
    let response = post(&app, "/api/experiments/training", body).await;
    let id = response.json::<Value>().await.unwrap()["job_id"]
        .as_u64()
        .unwrap();
    // The first worker measures the ceilings before it serves a job.
    assert_eq!(wait_for(&app, id).await["status"], "done");
    let card: Value = app.get("/api/device").await.json().await.unwrap();
    let ceilings = &card["ceilings"];
    let figures = ceilings["figures"].as_array().unwrap();
    let keys: Vec<&str> = figures.iter().map(|f| f["key"].as_str().unwrap()).collect();
    if card["device"]["kind"] == "cpu" {
        assert_eq!(keys, ["memcpy", "sgemm"], "{ceilings}");
    } else {
        for key in [
            "h2d_pinned",
            "d2h_pinned",
            "h2d_pageable",
            "d2h_pageable",
            "d2d",
            "gemm_fp32",
            "gemm_bf16",
        ] {
            assert!(keys.contains(&key), "{key} in {keys:?}");
        }
    }
    for f in figures {
        let (low, value, high) = (
            f["low"].as_f64().unwrap(),
            f["value"].as_f64().unwrap(),
            f["high"].as_f64().unwrap(),
        );
        assert!(0.0 < low && low <= value && value <= high, "{f}");
    }
}

#[tokio::test]
async fn a_training_run_lowers_the_loss_and_reports_its_costs() {
    let app = spawn().await;
    let body = json!({"batch": 64, "hidden": 32, "steps": 120, "log_every": 10, "optimizer": "adam", "precision": "fp32"});
    let response = post(&app, "/api/experiments/training", body).await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let id = response.json::<Value>().await.unwrap()["job_id"]
        .as_u64()
        .unwrap();
    let job = wait_for(&app, id).await;
    assert_eq!(job["status"], "done", "{job}");
    let r = &job["result"];
    let curve = r["loss_curve"].as_array().unwrap();
    assert_eq!(curve.len(), 12);
    let (first, last) = (
        curve[0]["loss"].as_f64().unwrap(),
        curve[11]["loss"].as_f64().unwrap(),
    );
    assert!(last < first, "loss falls: {first} -> {last}");
    assert!(r["samples_per_sec"].as_f64().unwrap() > 0.0);
    assert!(r["read_every_step_ms"].as_f64().unwrap() > 0.0);
    let device: Value = app.get("/api/device").await.json().await.unwrap();
    assert_eq!(
        r["provenance"]["backend"], device["device"]["kind"],
        "the training run says which backend ran it, the server's"
    );

    for (bad, expected) in [
        (
            json!({"batch": 0, "hidden": 32, "steps": 10, "log_every": 1}),
            "batch",
        ),
        (
            json!({"batch": 8, "hidden": 1_000_000, "steps": 10, "log_every": 1}),
            "hidden",
        ),
        (
            json!({"batch": 8, "hidden": 8, "steps": 1_000_000, "log_every": 1}),
            "steps",
        ),
        (
            json!({"batch": 8, "hidden": 8, "steps": 10, "log_every": 1, "precision": "fp8"}),
            "precision",
        ),
    ] {
        let response = post(&app, "/api/experiments/training", bad.clone()).await;
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        let error: Value = response.json().await.unwrap();
        assert!(message(&error).contains(expected), "{error}");
    }
}

#[tokio::test]
async fn the_allocator_playground_moves_three_bars_and_fails_like_pytorch() {
    let app = spawn_tuned(|config| config.limits.playground_mib_per_student = 64).await;
    let student = crate::support::student();
    let url = |p: &str| format!("{}{p}", app.base);
    let alloc = |name: &str, mib: f64| {
        student
            .post(url("/api/playground/tensors"))
            .json(&json!({"name": name, "mib": mib}))
            .send()
    };

    let v: Value = alloc("weights", 16.0).await.unwrap().json().await.unwrap();
    assert_eq!(v["pool"]["allocated_bytes"], 16 << 20);
    assert_eq!(v["pool"]["reserved_bytes"], 16 << 20);
    assert!(v["system_used_bytes"].as_u64().unwrap() > 0);
    alloc("acts", 32.0).await.unwrap();
    let v: Value = send_json(student.delete(url("/api/playground/tensors/acts"))).await;
    assert_eq!(
        (
            v["pool"]["allocated_bytes"].as_u64(),
            v["pool"]["reserved_bytes"].as_u64()
        ),
        (Some(16 << 20), Some(48 << 20)),
        "freed blocks stay reserved"
    );
    let v: Value = send_json(student.post(url("/api/playground/empty-cache"))).await;
    assert_eq!(v["pool"]["reserved_bytes"], 16 << 20);

    let oom = alloc("huge", 60.0).await.unwrap();
    assert_eq!(oom.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let error: Value = oom.json().await.unwrap();
    assert!(
        message(&error).starts_with("CUDA out of memory. Tried to allocate 60.00 MiB."),
        "{error}"
    );

    let other: Value = crate::support::student()
        .get(url("/api/playground"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        other["pool"]["reserved_bytes"], 0,
        "each student has their own pool"
    );
    for (body, status) in [
        (
            json!({"name": "../x", "mib": 1}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            json!({"name": "x", "mib": -1}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (json!({"name": "x"}), StatusCode::BAD_REQUEST),
    ] {
        assert_eq!(
            student
                .post(url("/api/playground/tensors"))
                .json(&body)
                .send()
                .await
                .unwrap()
                .status(),
            status,
            "{body}"
        );
    }
    assert_eq!(
        student
            .delete(url("/api/playground/tensors/nope"))
            .send()
            .await
            .unwrap()
            .status(),
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let v: Value = send_json(student.post(url("/api/playground/reset"))).await;
    assert_eq!(v["pool"]["reserved_bytes"], 0);

    let snap: Value = app.get("/api/memory").await.json().await.unwrap();
    assert_eq!(snap["backend"], app.state.engine.card.kind.name());
    assert!(snap["host_total_bytes"].as_u64().unwrap() > 0);
}

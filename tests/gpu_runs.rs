//! A learner's own GPU run over HTTP (`/api/me/gpu-runs`): each way an upload can be
//! wrong gets its own status and a message that says what is wrong; a good one is
//! stored for that student only, listed, refused a second time, and removed; the
//! course's Colab notebook downloads from `/notebooks/`.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::hostile::message;
use crate::support::{TestApp, repo_path, spawn, student};

/// The bench document behind the course's H200 recording.
fn h200_bench() -> Value {
    let path = repo_path("content/reference-runs/recorded-nvidia-h200-1795857617.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let run = &file["recorded"];
    json!({
        "gpulab_version": run["gpulab_version"],
        "generated_at_unix": run["recorded_at_unix"],
        "device": {"kind": "cuda", "name": run["device"], "driver_version": run["driver_version"]},
        "experiments": run["experiments"],
    })
}

async fn upload(app: &TestApp, as_: &reqwest::Client, body: Vec<u8>) -> (StatusCode, Value) {
    let response = as_
        .post(format!("{}/api/me/gpu-runs", app.base))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn runs(app: &TestApp, as_: &reqwest::Client) -> Vec<Value> {
    let response = as_
        .get(format!("{}/api/me/gpu-runs", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json::<Vec<Value>>().await.unwrap()
}

#[tokio::test]
async fn bad_uploads_are_refused_with_a_status_and_a_reason_each() {
    let app = spawn().await;
    let ada = student();
    let big = vec![b' '; gpulab::config::Limits::LEARNER_RUN_MAX_BYTES + 10];
    let mut cpu = h200_bench();
    cpu["device"]["kind"] = json!("cpu");
    let mut foreign = h200_bench();
    foreign["experiments"][0]["result"]["provenance"]["backend"] = json!("cpu");
    let cases: Vec<(Vec<u8>, StatusCode, &str)> = vec![
        (
            big,
            StatusCode::PAYLOAD_TOO_LARGE,
            "a `gpulab bench all --json` run is at most",
        ),
        (vec![0xff, 0xfe], StatusCode::BAD_REQUEST, "not text"),
        (
            b"{not json".to_vec(),
            StatusCode::BAD_REQUEST,
            "not a JSON document",
        ),
        (
            b"{}".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "`gpulab_version` is missing",
        ),
        (
            cpu.to_string().into_bytes(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "made on the CPU backend",
        ),
        (
            foreign.to_string().into_bytes(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "was not measured on the GPU",
        ),
    ];
    for (body, status, says) in cases {
        let (got, answer) = upload(&app, &ada, body).await;
        assert_eq!(got, status, "{answer}");
        assert!(message(&answer).contains(says), "{status}: {answer}");
    }
    assert!(
        runs(&app, &ada).await.is_empty(),
        "nothing refused was stored"
    );
}

#[tokio::test]
async fn a_good_run_is_the_uploaders_only_once_and_removable() {
    let app = spawn().await;
    let (ada, bob) = (student(), student());
    let body = h200_bench().to_string().into_bytes();
    let (status, stored) = upload(&app, &ada, body.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{stored}");
    assert_eq!(stored["file"]["title"], "Your run on NVIDIA H200");
    assert_eq!(
        stored["file"]["recorded"]["recorded_at_unix"],
        1_795_857_617u64
    );
    let (again, answer) = upload(&app, &ada, body).await;
    assert_eq!(again, StatusCode::CONFLICT);
    assert!(
        message(&answer).contains("already among your runs"),
        "{answer}"
    );
    let listed = runs(&app, &ada).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], stored["id"]);
    assert!(
        runs(&app, &bob).await.is_empty(),
        "another student sees none of it"
    );
    // The course's own recordings are unchanged by it.
    let course: Vec<Value> = app.get("/api/reference-runs").await.json().await.unwrap();
    assert!(
        course
            .iter()
            .all(|f| f["title"] != "Your run on NVIDIA H200")
    );
    let id = stored["id"].as_i64().unwrap();
    let remove =
        |who: &reqwest::Client, path: String| who.delete(format!("{}{path}", app.base)).send();
    let path = format!("/api/me/gpu-runs/{id}");
    assert_eq!(
        remove(&bob, path.clone()).await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    let bad = remove(&ada, "/api/me/gpu-runs/seven".into()).await.unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        remove(&ada, path).await.unwrap().status(),
        StatusCode::NO_CONTENT
    );
    assert!(runs(&app, &ada).await.is_empty());
}

#[tokio::test]
async fn the_colab_notebook_downloads_and_an_unknown_one_is_not_found() {
    let app = spawn().await;
    let response = app.get("/notebooks/gpulab-colab.ipynb").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-disposition"],
        "attachment; filename=\"gpulab-colab.ipynb\""
    );
    let notebook: Value = response.json().await.unwrap();
    assert_eq!(notebook["nbformat"], 4);
    let shipped: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("content/notebooks/gpulab-colab.ipynb")).unwrap(),
    )
    .unwrap();
    assert_eq!(notebook, shipped);
    assert_eq!(
        app.get("/notebooks/nope.ipynb").await.status(),
        StatusCode::NOT_FOUND
    );
}

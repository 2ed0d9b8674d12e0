//! Class-scale behaviour over HTTP: health and readiness probes, Prometheus metrics,
//! the per-student experiment rate limit, and the instructor's view of GPU use.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::client::{instructor, send_json, text};
use crate::support::hostile::message;
use crate::support::jobs::{post, wait_for};
use crate::support::{spawn, spawn_tuned, student};

#[tokio::test]
async fn health_and_readiness_probes_answer() {
    let app = spawn().await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), StatusCode::OK);
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), StatusCode::OK);
    let body: Value = ready.json().await.unwrap();
    assert_eq!(body["database"], "ok");
    let backend = body["gpu"]["backend"].as_str().unwrap();
    assert!(["cuda", "cpu"].contains(&backend));
    // The backend in use passed its start-up self-test, and says which checks ran.
    assert_eq!(body["selftest"]["backend"], backend, "{body}");
    assert_eq!(body["selftest"]["ok"], true, "{body}");
    let checks = body["selftest"]["checks"].as_array().unwrap();
    assert!(
        !checks.is_empty() && checks.iter().all(|c| c["outcome"] == "pass"),
        "{body}"
    );
}

#[tokio::test]
async fn a_failed_start_up_self_test_makes_the_server_unready_and_says_why() {
    // GPULAB_INJECT_SELFTEST_FAILURE adds a failing check. On a GPU the server falls
    // back to the CPU (tests/gpu.rs checks that); on the CPU there is nothing to fall
    // back to, so the server reports not ready with the failed check.
    let dir = tempfile::tempdir().unwrap();
    let server = crate::support::BinaryServer::start_with_env(
        &dir.path().join("gpulab.db"),
        &[("GPULAB_INJECT_SELFTEST_FAILURE", "1")],
    );
    let ready = reqwest::get(format!("{}/readyz", server.base))
        .await
        .unwrap();
    let status = ready.status();
    let body: Value = ready.json().await.unwrap();
    if body["gpu"]["backend"] == "cpu"
        && body["selftest"]["rejected_gpu"]
            .as_array()
            .unwrap()
            .is_empty()
    {
        assert_eq!(status, 503, "{body}");
        assert_eq!(body["status"], "not ready");
        let failed = body["selftest"]["failed"][0].as_str().unwrap();
        assert!(failed.contains("injected failure"), "{body}");
    } else {
        // A GPU machine: the GPU was rejected, the CPU serves (and failed the same
        // injected check, so it is unready too).
        assert_eq!(body["gpu"]["backend"], "cpu", "{body}");
        assert!(
            !body["selftest"]["rejected_gpu"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{body}"
        );
    }
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_jobs_by_outcome() {
    let app = spawn().await;
    app.get("/lessons/why-gpus").await;
    app.get("/lessons/no-such-lesson").await;
    let queued: Value = post(&app, "/api/experiments/timing", json!({}))
        .await
        .json()
        .await
        .unwrap();
    wait_for(&app, queued["job_id"].as_u64().unwrap()).await;
    let text = app.get("/metrics").await.text().await.unwrap();
    assert!(
        text.contains(
            r#"gpulab_http_requests_total{method="GET",route="/lessons/{slug}",status="200"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"route="/lessons/{slug}",status="404"} 1"#),
        "{text}"
    );
    assert!(text.contains("gpulab_http_request_duration_seconds_bucket"));
    assert!(
        text.contains(r#"gpulab_jobs_total{outcome="done"} 1"#),
        "{text}"
    );
    assert!(text.contains("gpulab_jobs_running_peak 1"), "{text}");
    assert!(text.contains("gpulab_queue_depth 0"), "{text}");
    assert!(
        !text.contains("no-such-lesson"),
        "raw paths never become labels"
    );
}

#[tokio::test]
async fn one_student_is_rate_limited_and_another_is_not() {
    let app = spawn_tuned(|config| {
        config.limits.experiments_per_minute = 2;
        config.limits.queue_length = 32;
        config.limits.pending_per_address = 32;
    })
    .await;
    let (ann, bob, cy) = (student(), student(), student());
    let submit = |client: &reqwest::Client| {
        client
            .post(format!("{}/api/experiments/timing", app.base))
            .json(&json!({}))
            .send()
    };
    // The rate binds only while another student waits (alone, a student is not
    // limited): Cy, alone, queues 24 timing runs, each at least 90 ms of work whatever
    // the device (50 ms of warm-up, eight 5 ms kernels), so hers wait while Ann asks.
    for _ in 0..24 {
        assert_eq!(submit(&cy).await.unwrap().status(), StatusCode::ACCEPTED);
    }
    assert_eq!(submit(&ann).await.unwrap().status(), StatusCode::ACCEPTED);
    assert_eq!(submit(&ann).await.unwrap().status(), StatusCode::ACCEPTED);
    let limited = submit(&ann).await.unwrap();
    assert!(
        app.state.engine.queue_depth().await > 2,
        "Cy's runs were still waiting when Ann was refused"
    );
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let body: Value = limited.json().await.unwrap();
    assert!(message(&body).contains("per minute") || message(&body).contains("last minute"));
    assert_eq!(submit(&bob).await.unwrap().status(), StatusCode::ACCEPTED);
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains(r#"gpulab_experiments_refused_total{reason="rate_limited"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn the_instructor_sees_gpu_use_per_student() {
    let app = spawn_tuned(|config| {
        config.instructor_token = Some("class-token-long-enough-for-the-rule-32".into())
    })
    .await;
    let ann = student();
    ann.post(format!("{}/me/name", app.base))
        .form(&[("display_name", "Ann <b>Lee</b>")])
        .send()
        .await
        .unwrap();
    let queued: Value = send_json(
        ann.post(format!("{}/api/experiments/timing", app.base))
            .json(&json!({})),
    )
    .await;
    crate::support::jobs::wait_for_as(&app, &ann, queued["job_id"].as_u64().unwrap()).await;
    let (teacher, _) = instructor(&app, "class-token-long-enough-for-the-rule-32").await;
    let page = text(&teacher, &format!("{}/instructor", app.base)).await;
    // The words name what the class shares: a CPU server promises no GPU.
    let device: Value = send_json(teacher.get(format!("{}/api/device", app.base))).await;
    let (unit, other) = match device["gpu"]["backend"].as_str() {
        Some("cuda") => ("GPU", "CPU"),
        _ => ("CPU", "GPU"),
    };
    assert!(page.contains(&format!("{unit} use per student")), "{page}");
    assert!(page.contains(&format!("The shared {unit}")), "{page}");
    assert!(!page.contains(&format!("shared {other}")), "{page}");
    assert!(
        page.contains("Ann &#60;b&#62;Lee&#60;/b&#62;"),
        "name escaped: {page}"
    );
    assert!(page.contains("1 finished"), "{page}");
}

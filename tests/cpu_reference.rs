//! The CPU SGEMM reference record (`--cpu-reference`, written by
//! `tests/bench/sgemm.sh`): a record made on this machine's CPU is served in
//! `/api/device` as `device.cpu.blas_reference`, exactly as written; one from another CPU,
//! a malformed one and none at all leave the card without it.

use serde_json::{Value, json};

use crate::support::spawn_tuned;

/// A record as the benchmark writes it, naming `model` with `cores` logical cores.
fn record(model: &str, cores: usize) -> Value {
    json!({
        "format": 1,
        "cpu": {"model": model, "logical_cores": cores},
        "blas": "OpenBLAS 0.3.31",
        "library": "numpy 2.4.6 with OpenBLAS 0.3.31 (SkylakeX kernel, 2 threads)",
        "recorded_at": "2026-11-27T09:14:03Z",
        "load_average": {"before": [1.35, 1.38, 1.65], "after": [1.4, 1.39, 1.65]},
        "rounds": 5,
        "rows": [
            {"size": 256, "numpy_ms": 0.1485, "gpulab_ms": 0.1751, "ratio": 0.86},
            {"size": 1024, "numpy_ms": 6.724, "gpulab_ms": 7.116, "ratio": 0.94},
        ],
    })
}

/// `/api/device`'s CPU reference when the server reads `contents` as its record.
async fn served_with(contents: Option<String>) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cpu-reference.json");
    if let Some(text) = contents {
        std::fs::write(&path, text).unwrap();
    }
    let app = spawn_tuned(|config| config.cpu_reference = path).await;
    let card: Value = app.get("/api/device").await.json().await.unwrap();
    assert!(card["device"]["cpu"]["logical_cores"].as_u64().unwrap() >= 1);
    card["device"]["cpu"]["blas_reference"].clone()
}

#[tokio::test]
async fn a_record_made_on_this_cpu_is_served_with_the_device_card() {
    let here = gpulab::host::cpu_info();
    let written = record(&here.model, here.logical_cores);
    let served = served_with(Some(written.to_string())).await;
    assert_eq!(served, written);
}

#[tokio::test]
async fn a_record_from_another_cpu_a_broken_one_or_none_is_not_served() {
    let here = gpulab::host::cpu_info();
    let foreign = record(&format!("Not {}", here.model), here.logical_cores);
    assert_eq!(served_with(Some(foreign.to_string())).await, Value::Null);
    let more_cores = record(&here.model, here.logical_cores + 1);
    assert_eq!(served_with(Some(more_cores.to_string())).await, Value::Null);
    let mut future = record(&here.model, here.logical_cores);
    future["format"] = json!(2);
    assert_eq!(served_with(Some(future.to_string())).await, Value::Null);
    assert_eq!(
        served_with(Some("{\"format\": 1".into())).await,
        Value::Null
    );
    assert_eq!(served_with(None).await, Value::Null);
}

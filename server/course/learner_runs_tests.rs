//! Tests of [`super`]: the course's own H200 recording, turned back into the bench
//! document it was imported from, is a valid upload; each way a file can be wrong is
//! refused with a reason that names it.

use serde_json::{Value, json};

use super::*;

const MAX: usize = 1 << 20;
/// 2026-11-28, about 12 hours after the recording.
const NOW: u64 = 1_795_900_000;

fn known() -> Vec<&'static str> {
    crate::experiments::REGISTRY
        .iter()
        .map(|e| e.name())
        .collect()
}

/// The bench document behind `content/reference-runs/recorded-nvidia-h200-*.json`.
fn h200_bench() -> Value {
    let text =
        std::fs::read_to_string("content/reference-runs/recorded-nvidia-h200-1795857617.json")
            .unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    let run = &file["recorded"];
    json!({
        "gpulab_version": run["gpulab_version"],
        "generated_at_unix": run["recorded_at_unix"],
        "device": {
            "kind": "cuda",
            "name": run["device"],
            "driver_version": run["driver_version"],
            "cuda_driver_version": run["cuda_version"],
        },
        "experiments": run["experiments"],
    })
}

fn check(doc: &Value) -> Result<ReferenceFile, UploadError> {
    check_upload(doc.to_string().as_bytes(), MAX, &known(), NOW)
}

fn refusal(doc: &Value) -> String {
    check(doc).unwrap_err().to_string()
}

#[test]
fn a_real_gpu_run_is_taken_and_titled_as_the_learners_not_the_servers() {
    let file = check(&h200_bench()).unwrap();
    let run = file.recorded.as_ref().unwrap();
    assert_eq!(run.device, "NVIDIA H200");
    assert_eq!(run.recorded_at_unix, 1_795_857_617);
    assert!(!run.fixture);
    assert_eq!(file.title, "Your run on NVIDIA H200");
    assert!(file.note.contains("not this server's GPU"), "{}", file.note);
    assert_eq!(
        run.experiments.len(),
        h200_bench()["experiments"].as_array().unwrap().len()
    );
}

#[test]
fn size_text_and_shape_are_checked_first() {
    let big = vec![b' '; MAX + 1];
    assert_eq!(
        check_upload(&big, MAX, &known(), NOW).unwrap_err(),
        UploadError::TooLarge {
            size: MAX + 1,
            max: MAX
        }
    );
    assert_eq!(
        check_upload(&[0xff, 0xfe, 0x00], MAX, &known(), NOW).unwrap_err(),
        UploadError::NotText
    );
    assert!(refusal(&json!([1, 2])).contains("gpulab_version"));
    let mut cpu = h200_bench();
    cpu["device"]["kind"] = json!("cpu");
    assert_eq!(check(&cpu).unwrap_err(), UploadError::NotGpu);
    assert!(refusal(&cpu).contains("made on the CPU backend, not a GPU"));
}

#[test]
fn an_unknown_or_repeated_experiment_is_named() {
    let mut doc = h200_bench();
    doc["experiments"][0]["name"] = json!("warp-drive");
    assert!(refusal(&doc).contains("`warp-drive`, which this course does not have"));
    let mut doc = h200_bench();
    let first = doc["experiments"][0].clone();
    doc["experiments"][1] = first.clone();
    let name = first["name"].as_str().unwrap().to_string();
    assert!(refusal(&doc).contains(&format!("`{name}` is listed twice")));
}

#[test]
fn a_result_measured_on_the_cpu_or_another_device_is_not_passed_off_as_this_gpus() {
    let mut doc = h200_bench();
    doc["experiments"][0]["result"]["provenance"]["backend"] = json!("cpu");
    assert!(refusal(&doc).contains("was not measured on the GPU"));
    let mut doc = h200_bench();
    doc["experiments"][0]["result"]["provenance"]["device"] = json!("Tesla T4");
    assert!(
        refusal(&doc).contains("measured on `Tesla T4`, not on the run's device `NVIDIA H200`")
    );
    let mut doc = h200_bench();
    doc["experiments"][0] = json!({"name": doc["experiments"][0]["name"], "result": 3});
    assert!(refusal(&doc).contains("needs either a `result` object or an `error` message"));
}

#[test]
fn dates_and_names_must_be_ones_a_run_can_have() {
    let mut doc = h200_bench();
    doc["generated_at_unix"] = json!(NOW + 3 * 24 * 3600);
    assert!(refusal(&doc).contains("in the future"));
    doc["generated_at_unix"] = json!(1_000);
    assert!(refusal(&doc).contains("before 2020"));
    let mut doc = h200_bench();
    doc["device"]["name"] = json!("x".repeat(101));
    assert!(refusal(&doc).contains("device name must be 1 to 100 characters"));
    doc["device"]["name"] = json!("Tesla\u{7}T4");
    assert!(refusal(&doc).contains("control characters"));
}

//! Reference GPU results: `gpulab reference import` on a good bench document, a
//! malformed one and one recorded on the CPU; `gpulab check` refusing a broken
//! reference file; and `/api/reference-runs` serving the shipped published peaks.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::{repo_path, spawn};

fn gpulab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .args(args)
        .env_remove("GPULAB_CONTENT")
        .output()
        .unwrap()
}

/// A copy of the course content in a temporary folder, so a test may add files.
fn content_copy() -> tempfile::TempDir {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.path().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    copy(&repo_path("content"), dir.path());
    dir
}

fn bench_document(kind: &str) -> String {
    serde_json::json!({
        "gpulab_version": "0.1.0",
        "generated_at_unix": 1_763_900_000u64,
        "device": {"kind": kind, "name": "Fixture GPU", "driver_version": "1.0"},
        "experiments": [
            {"name": "matmul", "params": {"max_size": 64}, "result": {"crossover_size": 64, "rows": []}},
            {"name": "timing", "params": {}, "error": "a fixture, not a run"},
        ],
    })
    .to_string()
}

/// `gpulab reference import` of a bench document made on `kind` into `content`, with
/// `extra` flags; asserts it succeeded and returns the file it wrote as `name`.
fn import_run(
    content: &tempfile::TempDir,
    kind: &str,
    extra: &[&str],
    name: &str,
) -> serde_json::Value {
    let bench = content.path().join("bench.json");
    std::fs::write(&bench, bench_document(kind)).unwrap();
    let dir = content.path().to_str().unwrap();
    let mut args = vec![
        "reference",
        "import",
        bench.to_str().unwrap(),
        "--content",
        dir,
    ];
    args.extend_from_slice(extra);
    let out = gpulab(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = content.path().join("reference-runs").join(name);
    serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).unwrap()
}

#[test]
fn import_writes_a_recorded_run_that_check_accepts_and_never_overwrites_it() {
    let content = content_copy();
    let file = import_run(
        &content,
        "cuda",
        &[],
        "recorded-fixture-gpu-1763900000.json",
    );
    let bench = content.path().join("bench.json");
    let dir = content.path().to_str().unwrap();
    assert_eq!(file["kind"], "recorded");
    assert_eq!(file["recorded"]["device"], "Fixture GPU");
    assert_eq!(file["recorded"]["driver_version"], "1.0");
    assert_eq!(file["recorded"]["gpulab_version"], "0.1.0");
    let check = gpulab(&["check", "--content", dir]);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let again = gpulab(&[
        "reference",
        "import",
        bench.to_str().unwrap(),
        "--content",
        dir,
    ]);
    assert!(
        !again.status.success(),
        "a second import must not overwrite the first"
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("cannot create"));
}

#[test]
fn malformed_and_cpu_documents_are_refused_with_a_reason() {
    let content = content_copy();
    let dir = content.path().to_str().unwrap();
    let recorded = || -> Vec<String> {
        let mut names: Vec<String> = content
            .path()
            .join("reference-runs")
            .read_dir()
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("recorded-"))
            .collect();
        names.sort();
        names
    };
    // The course ships GPU recordings of its own; a refused import adds none.
    let shipped = recorded();
    for (text, reason) in [
        ("{\"gpulab_version\": ", "not a JSON document"),
        (
            "{\"gpulab_version\": \"0.1.0\"}",
            "`generated_at_unix` must be a whole number",
        ),
        (&bench_document("cpu") as &str, "made on the CPU backend"),
    ] {
        let file = content.path().join("bad.json");
        std::fs::write(&file, text).unwrap();
        let out = gpulab(&[
            "reference",
            "import",
            file.to_str().unwrap(),
            "--content",
            dir,
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(reason),
            "{reason}: {stderr}"
        );
    }
    assert_eq!(recorded(), shipped);
}

#[test]
fn check_names_a_broken_reference_file() {
    let content = content_copy();
    let broken = serde_json::json!({
        "kind": "published", "title": "Peaks", "note": "peaks",
        "figures": [{"device": "X", "metric": "pcie_gbps", "value": 64, "unit": "TFLOP/s",
                     "experiments": ["nope"], "source": {"title": "", "url": "http://x"}}],
    });
    std::fs::write(
        content.path().join("reference-runs/broken.json"),
        broken.to_string(),
    )
    .unwrap();
    std::fs::write(
        content.path().join("reference-runs/syntax.json"),
        "{\"kind\": ",
    )
    .unwrap();
    let out = gpulab(&["check", "--content", content.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    for expected in [
        "broken.json:1: a `published` file's note must say",
        "unit `TFLOP/s` should be `GB/s`",
        "unknown experiment `nope`",
        "an https URL",
        "syntax.json:1: ",
    ] {
        assert!(
            stderr.contains(expected),
            "missing {expected:?} in:\n{stderr}"
        );
    }
}

#[tokio::test]
async fn the_api_serves_the_published_peaks_with_their_sources() {
    let app = spawn().await;
    let response = app.get("/api/reference-runs").await;
    assert_eq!(response.status(), 200);
    let files: serde_json::Value = response.json().await.unwrap();
    let published = files
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "published")
        .unwrap();
    assert!(published["note"].as_str().unwrap().contains("not measured"));
    for figure in published["figures"].as_array().unwrap() {
        assert!(
            figure["source"]["url"]
                .as_str()
                .unwrap()
                .starts_with("https://www.nvidia.com/")
                || figure["source"]["url"]
                    .as_str()
                    .unwrap()
                    .starts_with("https://resources.nvidia.com/")
        );
        assert!(figure["value"].as_f64().unwrap() > 0.0);
    }
}

#[tokio::test]
async fn the_api_serves_the_h200_recording_the_course_ships() {
    let app = spawn().await;
    let files: serde_json::Value = app.get("/api/reference-runs").await.json().await.unwrap();
    let h200 = files
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "recorded" && f["recorded"]["device"] == "NVIDIA H200")
        .expect("the H200 recording in content/reference-runs");
    let run = &h200["recorded"];
    assert_ne!(run["fixture"], true, "a GPU's recording, not a fixture");
    assert_eq!(run["driver_version"], "580.159.04");
    assert_eq!(run["cuda_version"], "13.0");
    let transfer = run["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "transfer")
        .unwrap();
    let measured = &transfer["result"]["measured"];
    assert_eq!(measured["quantity"], "transfer.pinned_h2d_gbps");
    // Pinned host→device on an H200 over PCIe Gen5 x16: about 55 GB/s measured, below the
    // link's 64 GB/s per direction.
    let gbps = measured["value"].as_f64().unwrap();
    assert!((40.0..64.0).contains(&gbps), "{gbps} GB/s");
}

#[test]
fn a_cpu_run_imports_only_as_a_fixture_and_check_keeps_it_out_of_a_course() {
    let content = content_copy();
    let dir = content.path().to_str().unwrap();
    let file = import_run(
        &content,
        "cpu",
        &["--fixture"],
        "recorded-fixture-fixture-gpu-1763900000.json",
    );
    assert_eq!(file["recorded"]["fixture"], true);
    assert!(file["title"].as_str().unwrap().contains("not a GPU"));
    let check = gpulab(&["check", "--content", dir]);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(
        !check.status.success() && stderr.contains("test fixture"),
        "{stderr}"
    );
}

#[test]
fn the_cpu_chain_fixture_is_a_labelled_fixture_with_the_measured_values() {
    let text = std::fs::read_to_string(crate::support::repo_path(
        "tests/fixtures/reference-runs/cpu-chain-fixture.json",
    ))
    .unwrap();
    let file: gpulab::course::reference_runs::ReferenceFile = serde_json::from_str(&text).unwrap();
    assert!(file.is_fixture() && file.title.contains("not a GPU"));
    let known: Vec<&str> = gpulab::experiments::REGISTRY
        .iter()
        .map(|e| e.name())
        .collect();
    assert!(gpulab::course::reference_runs::validate(&file, &known).is_empty());
    let run = file.recorded.unwrap();
    let transfer = run
        .experiments
        .iter()
        .find(|e| e["name"] == "transfer")
        .unwrap();
    assert!(transfer["result"]["measured"]["value"].as_f64().unwrap() > 0.0);
}

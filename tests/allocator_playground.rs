//! The allocator playground through the HTTP API on this machine's backend: PyTorch's
//! caching-allocator figures (the issue's 1, 4, 10, free, 4 MiB sequence ends at 9 of
//! 22 MiB), the allocator options, and the memory_viz snapshot read back by Python's
//! `pickle` (and, where the reference venv has torch, by `torch.cuda._memory_viz`).

use std::path::PathBuf;
use std::process::Command;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::client::send_json;
use crate::support::hostile::message;
use crate::support::spawn_tuned;

const MIB: u64 = 1 << 20;

fn figures(v: &Value) -> (u64, u64) {
    (
        v["pool"]["allocated_bytes"].as_u64().unwrap() / (MIB / 2),
        v["pool"]["reserved_bytes"].as_u64().unwrap() / (MIB / 2),
    )
}

#[tokio::test]
async fn the_issue_sequence_gives_9_of_22_mib_and_a_1_mib_tensor_reserves_2_mib() {
    let app = spawn_tuned(|config| config.limits.playground_mib_per_student = 64).await;
    let student = crate::support::student();
    let url = |p: &str| format!("{}{p}", app.base);
    let alloc = |name: &str, mib: f64| {
        send_json(
            student
                .post(url("/api/playground/tensors"))
                .json(&json!({"name": name, "mib": mib})),
        )
    };
    // Figures in half-MiB units: (allocated, reserved).
    let v = alloc("a", 1.0).await;
    assert_eq!(figures(&v), (2, 4), "1 MiB allocated, 2 MiB reserved: {v}");
    assert_eq!(v["pool"]["segments"].as_array().unwrap().len(), 1);
    assert_eq!(v["pool"]["segments"][0]["segment_type"], "small");
    assert_eq!(figures(&alloc("b", 4.0).await), (10, 44));
    assert_eq!(figures(&alloc("c", 10.0).await), (30, 44));
    let v = send_json(student.delete(url("/api/playground/tensors/c"))).await;
    assert_eq!(figures(&v), (10, 44));
    let v = alloc("d", 4.0).await;
    assert_eq!(figures(&v), (18, 44), "9 MiB allocated of 22 MiB reserved");
    let large = &v["pool"]["segments"][1];
    let blocks: Vec<(&str, u64)> = large["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["state"].as_str().unwrap(),
                b["size"].as_u64().unwrap() / MIB,
            )
        })
        .collect();
    assert_eq!(
        blocks,
        [("allocated", 4), ("allocated", 4), ("free", 12)],
        "b, d and the free rest of one 20 MiB segment: {large}"
    );
    // The student's cap counts reserved bytes: 22 MiB are held, so 44 MiB more fits
    // nowhere in a 64 MiB cap, and the message is PyTorch's.
    let oom = student
        .post(url("/api/playground/tensors"))
        .json(&json!({"name": "big", "mib": 44}))
        .send()
        .await
        .unwrap();
    assert_eq!(oom.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let text = message(&oom.json().await.unwrap()).to_string();
    assert!(
        text.starts_with("CUDA out of memory. Tried to allocate 44.00 MiB.")
            && text.contains("Of the allocated memory 9.00 MiB is allocated by PyTorch, and 13.00 MiB is reserved by PyTorch but unallocated."),
        "{text}"
    );
}

#[tokio::test]
async fn the_options_switch_like_pytorch_cuda_alloc_conf_and_bad_ones_are_refused() {
    let app = spawn_tuned(|config| config.limits.playground_mib_per_student = 64).await;
    let student = crate::support::student();
    let url = |p: &str| format!("{}{p}", app.base);
    for (body, status) in [
        (
            json!({"max_split_size_mb": 19}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            json!({"max_split_size_mb": 0}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            json!({"roundup_power2_divisions": 4}),
            StatusCode::BAD_REQUEST,
        ),
        (
            json!({"expandable_segments": "yes"}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let response = student
            .post(url("/api/playground/config"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{body}");
    }
    // PyTorch 2.12 and later take 20 itself (`>= 20` in c10/core/AllocatorConfig.cpp).
    let v = send_json(
        student
            .post(url("/api/playground/config"))
            .json(&json!({"max_split_size_mb": 20})),
    )
    .await;
    assert_eq!(v["pool"]["conf"]["max_split_size_mb"], 20, "{v}");
    let v = send_json(
        student
            .post(url("/api/playground/config"))
            .json(&json!({"expandable_segments": true})),
    )
    .await;
    assert_eq!(v["pool"]["conf"]["expandable_segments"], true);
    for (name, mib) in [("a", 4), ("b", 4), ("c", 4), ("d", 4), ("e", 4), ("f", 4)] {
        send_json(
            student
                .post(url("/api/playground/tensors"))
                .json(&json!({"name": name, "mib": mib})),
        )
        .await;
    }
    let v = send_json(student.get(url("/api/playground"))).await;
    // Six 4 MiB tensors fill one 20 MiB page and start a second: 40 MiB in ONE
    // segment, where plain segments would have made two 20 MiB segments.
    assert_eq!(figures(&v), (48, 80));
    assert_eq!(v["pool"]["segments"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["pool"]["segments"][0]["is_expandable"], true);
}

/// The Python that reads the snapshot: the reference venv (with torch) if set up.
fn python() -> (PathBuf, bool) {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/reference-venv/bin/python");
    if venv.exists() {
        (venv, true)
    } else {
        (PathBuf::from("python3"), false)
    }
}

/// Reads a pickled snapshot the way memory_viz does: every key it uses, the sizes
/// adding up, and (with torch) `_memory_viz`'s own summaries and HTML built from it.
const READ_SNAPSHOT: &str = r#"
import pickle, sys
with open(sys.argv[1], "rb") as f:
    s = pickle.load(f)
assert set(s) >= {"segments", "device_traces"}, s.keys()
for seg in s["segments"]:
    for key in ("address", "total_size", "stream", "segment_type", "allocated_size", "blocks"):
        assert key in seg, key
    assert sum(b["size"] for b in seg["blocks"]) == seg["total_size"]
    for b in seg["blocks"]:
        assert b["state"] in ("active_allocated", "inactive"), b
        for key in ("address", "size", "requested_size", "frames"):
            assert key in b, key
trace = s["device_traces"][0]
for e in trace:
    for key in ("action", "addr", "size", "stream", "time_us", "frames"):
        assert key in e, key
print("segments", len(s["segments"]), "blocks", sum(len(x["blocks"]) for x in s["segments"]))
print("actions", ",".join(e["action"] for e in trace))
if sys.argv[2] == "torch":
    from torch.cuda import _memory_viz as mv
    summary = mv.segsum(s)
    assert "segments: 2" in summary, summary
    text = mv.trace(s)
    assert "cudaMalloc(" in text and "del " in text, text
    assert "snapshot.pickle" in mv.trace_plot(s) and "snapshot.pickle" in mv.segment_plot(s)
    print("memory_viz ok")
"#;

#[tokio::test]
async fn without_a_cookie_the_options_are_refused_and_the_snapshot_is_empty() {
    let app = spawn_tuned(|config| config.limits.playground_mib_per_student = 64).await;
    let cookieless = reqwest::Client::new();
    let url = |p: &str| format!("{}{p}", app.base);
    let refused = cookieless
        .post(url("/api/playground/config"))
        .json(&json!({"expandable_segments": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let body: Value = refused.json().await.unwrap();
    assert!(message(&body).contains("student cookie"), "{body}");
    let snapshot = cookieless
        .get(url("/api/playground/snapshot"))
        .send()
        .await
        .unwrap();
    assert_eq!(snapshot.status(), StatusCode::OK);
    // No playground was made for a client without a cookie: nothing is reserved.
    let v = send_json(cookieless.get(url("/api/playground"))).await;
    assert_eq!(figures(&v), (0, 0), "{v}");
}

#[tokio::test]
async fn the_snapshot_is_a_pickle_memory_viz_reads() {
    let app = spawn_tuned(|config| config.limits.playground_mib_per_student = 64).await;
    let student = crate::support::student();
    let url = |p: &str| format!("{}{p}", app.base);
    for (name, mib) in [("weights", 4.0), ("acts", 0.5), ("tmp", 3.0)] {
        send_json(
            student
                .post(url("/api/playground/tensors"))
                .json(&json!({"name": name, "mib": mib})),
        )
        .await;
    }
    send_json(student.delete(url("/api/playground/tensors/tmp"))).await;
    let response = student
        .get(url("/api/playground/snapshot"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "application/octet-stream"
    );
    assert!(
        response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains(".pickle")
    );
    let bytes = response.bytes().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("snapshot.pickle");
    std::fs::write(&file, &bytes).unwrap();
    let (python, has_torch) = python();
    let out = Command::new(&python)
        .args(["-c", READ_SNAPSHOT])
        .arg(&file)
        .arg(if has_torch { "torch" } else { "pickle" })
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("segments 2 blocks 4"), "{stdout}");
    assert!(
        stdout.contains(
            "actions segment_alloc,alloc,segment_alloc,alloc,alloc,free_requested,free_completed"
        ),
        "{stdout}"
    );
    if has_torch {
        assert!(stdout.contains("memory_viz ok"), "{stdout}");
    }
}

#[tokio::test]
async fn a_prediction_before_a_del_is_scored_against_the_pool_and_stored() {
    let app = spawn_tuned(|config| config.limits.playground_mib_per_student = 64).await;
    let student = crate::support::student();
    let url = |p: &str| format!("{}{p}", app.base);
    for (name, mib) in [("b", 4.0), ("c", 10.0)] {
        send_json(
            student
                .post(url("/api/playground/tensors"))
                .json(&json!({"name": name, "mib": mib})),
        )
        .await;
    }
    // Freeing c leaves 4 MiB allocated of a 20 MiB segment: 16 MiB reserved but
    // unallocated; the learner predicted 8.
    let v = send_json(student.delete(url("/api/playground/tensors/c?predict=8"))).await;
    assert_eq!(
        figures(&v),
        (8, 40),
        "the playground's own answer is kept: {v}"
    );
    assert_eq!(
        v["measured"]["quantity"],
        "playground.unallocated_after_free"
    );
    assert_eq!(v["measured"]["value"], 16.0, "{v}");
    assert_eq!(v["measured"]["unit"], "MiB");
    assert_eq!(v["prediction"]["predicted"], 8.0);
    assert_eq!(v["prediction"]["factor"], 2.0, "{v}");
    assert_eq!(v["prediction"]["direction"], "low");
    let progress = send_json(student.get(url("/api/me/progress"))).await;
    let stored = progress["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["quantity"] == "playground.unallocated_after_free")
        .cloned();
    assert!(
        stored.is_some_and(|p| p["predicted"] == 8.0 && p["measured"] == 16.0),
        "stored before the answer: {progress}"
    );
    let plain = send_json(
        student
            .post(url("/api/playground/tensors"))
            .json(&json!({"name": "e", "mib": 1.0})),
    )
    .await;
    assert!(plain.get("prediction").is_none(), "no prediction, no score");
}

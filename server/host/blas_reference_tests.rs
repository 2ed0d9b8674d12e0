//! The CPU reference record's loader: a record for this CPU is read whole, one from
//! another model or core count is refused with both named, a malformed one is refused
//! with what is wrong, and a missing file is no record at all.

use super::*;

fn here() -> CpuInfo {
    CpuInfo {
        model: "Test CPU @ 3.0GHz".into(),
        logical_cores: 8,
        memory_total_bytes: None,
        sgemm_kernel: String::new(),
        blas_reference: None,
    }
}

/// A record as `tests/bench/sgemm.sh` writes it, for `model` with `cores`.
fn record(model: &str, cores: usize) -> serde_json::Value {
    serde_json::json!({
        "format": 1,
        "cpu": {"model": model, "logical_cores": cores},
        "blas": "OpenBLAS 0.3.31",
        "library": "numpy 2.4.6 with OpenBLAS 0.3.31 (SkylakeX kernel, 8 threads)",
        "recorded_at": "2026-11-27T09:14:03Z",
        "load_average": {"before": [0.4, 0.5, 0.6], "after": [1.1, 0.7, 0.6]},
        "rounds": 7,
        "rows": [
            {"size": 256, "numpy_ms": 0.15, "gpulab_ms": 0.17, "ratio": 0.86},
            {"size": 1024, "numpy_ms": 6.72, "gpulab_ms": 7.12, "ratio": 0.94},
        ],
    })
}

#[test]
fn a_record_for_this_cpu_is_read_whole() {
    let text = record("Test CPU @ 3.0GHz", 8).to_string();
    let got = parse(&text, &here()).unwrap();
    assert_eq!(got.blas, "OpenBLAS 0.3.31");
    assert_eq!(got.recorded_at, "2026-11-27T09:14:03Z");
    assert_eq!(got.load_average.after, [1.1, 0.7, 0.6]);
    let sizes: Vec<usize> = got.rows.iter().map(|r| r.size).collect();
    assert_eq!(sizes, [256, 1024]);
    assert_eq!(got.rows[1].numpy_ms, 6.72);
    // What is served is what was read: it round-trips through JSON unchanged.
    let served = serde_json::to_value(&got).unwrap();
    assert_eq!(served, record("Test CPU @ 3.0GHz", 8));
}

#[test]
fn a_record_from_another_cpu_or_core_count_is_refused_naming_both() {
    let other_model = parse(&record("Other CPU", 8).to_string(), &here()).unwrap_err();
    let message = other_model.to_string();
    assert!(matches!(other_model, Refused::OtherCpu { .. }), "{message}");
    assert!(
        message.contains("Other CPU with 8 logical cores"),
        "{message}"
    );
    assert!(
        message.contains("Test CPU @ 3.0GHz with 8 logical cores"),
        "{message}"
    );
    // The same model in a container given fewer cores is another machine for SGEMM.
    let fewer = parse(&record("Test CPU @ 3.0GHz", 4).to_string(), &here()).unwrap_err();
    assert!(
        fewer.to_string().contains("with 4 logical cores"),
        "{fewer}"
    );
}

#[test]
fn malformed_records_are_refused_with_what_is_wrong() {
    let cases: [(&str, serde_json::Value); 4] = [
        ("format 2", {
            let mut r = record("Test CPU @ 3.0GHz", 8);
            r["format"] = 2.into();
            r
        }),
        ("no rows", {
            let mut r = record("Test CPU @ 3.0GHz", 8);
            r["rows"] = serde_json::json!([]);
            r
        }),
        ("n = 1024", {
            let mut r = record("Test CPU @ 3.0GHz", 8);
            r["rows"][1]["numpy_ms"] = 0.into();
            r
        }),
        ("missing field `blas`", {
            let mut r = record("Test CPU @ 3.0GHz", 8);
            r.as_object_mut().unwrap().remove("blas");
            r
        }),
    ];
    for (why, value) in cases {
        let refused = parse(&value.to_string(), &here()).unwrap_err();
        assert!(matches!(refused, Refused::Malformed(_)), "{why}: {refused}");
        assert!(refused.to_string().contains(why), "{why}: {refused}");
    }
    let not_json = parse("numpy 2.4.6: 0.94×", &here()).unwrap_err();
    assert!(matches!(not_json, Refused::Malformed(_)), "{not_json}");
}

#[test]
fn load_reads_a_file_and_a_missing_file_is_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cpu-reference.json");
    assert!(load(&path, &here()).unwrap().is_none());
    std::fs::write(&path, record("Test CPU @ 3.0GHz", 8).to_string()).unwrap();
    assert_eq!(load(&path, &here()).unwrap().unwrap().rows.len(), 2);
    std::fs::write(&path, record("Other CPU", 8).to_string()).unwrap();
    assert!(matches!(
        load(&path, &here()),
        Err(Refused::OtherCpu { .. })
    ));
    std::fs::write(&path, "x".repeat(MAX_BYTES as usize + 1)).unwrap();
    let huge = load(&path, &here()).unwrap_err();
    assert!(huge.to_string().contains("more than"), "{huge}");
    // A folder where the file should be is unreadable, not a panic.
    let folder = dir.path().join("folder.json");
    std::fs::create_dir(&folder).unwrap();
    assert!(load(&folder, &here()).is_err());
}

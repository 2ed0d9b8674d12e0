//! The GPU-side prediction quantities read off typed results shaped as a GPU run makes
//! them (no GPU here: these check the reading, not the measuring): the pinned
//! host-to-device bandwidth at the largest size, the crossover size (0 for "never"), and
//! BF16's speed-up over FP32; and that a GPU result is never read as a CPU quantity.

use super::matmul::{Matmul, MatmulParams, MatmulResult};
use super::precision::{Precision, PrecisionParams, PrecisionResult, PrecisionRow};
use super::trace::{Trace, TraceBuilder};
use super::transfer::{Transfer, TransferParams, TransferPoint, TransferResult};
use super::{Experiment, Finished, Typed};
use crate::measure::summarize;

fn no_trace() -> Trace {
    TraceBuilder::new("test", true, "none").finish()
}

fn point(direction: &'static str, memory: &'static str, bytes: u64, gbps: f64) -> TransferPoint {
    TransferPoint {
        direction,
        memory,
        bytes,
        copies: 1,
        gbps: summarize(&[gbps * 0.9, gbps, gbps * 1.1]).unwrap(),
    }
}

#[test]
fn pinned_h2d_is_read_at_the_largest_size_on_a_gpu_only() {
    let output = TransferResult {
        points: vec![
            point("h2d", "pinned", 1 << 20, 11.0),
            point("h2d", "pinned", 1 << 26, 24.5),
            point("h2d", "pageable", 1 << 26, 9.0),
            point("d2h", "pinned", 1 << 26, 26.0),
        ],
        link_peak_gbps: Some(32.0),
        trace: no_trace(),
    };
    let params = TransferParams { max_bytes: 1 << 26 };
    let typed = Typed::<Transfer> { params, output };
    let gpu = typed.measured(true).unwrap();
    assert_eq!(
        (gpu.quantity, gpu.value, gpu.unit),
        ("transfer.pinned_h2d_gbps", 24.5, "GB/s")
    );
    assert!(
        typed.measured(false).is_none(),
        "a GPU sweep has no host memcpy to read on the CPU"
    );
}

#[test]
fn the_crossover_is_the_size_or_zero_for_never() {
    let result = |crossover| MatmulResult {
        rows: Vec::new(),
        crossover_size: crossover,
        crossover_with_copy_size: None,
        max_abs_diff_vs_cpu: None,
        trace: no_trace(),
    };
    let params = MatmulParams { max_size: 4096 };
    assert_eq!(
        Matmul::measure("matmul.crossover_size", &params, &result(Some(512))),
        Some(512.0)
    );
    assert_eq!(
        Matmul::measure("matmul.crossover_size", &params, &result(None)),
        Some(0.0)
    );
}

#[test]
fn bf16_speedup_is_fp32_time_over_bf16_time() {
    let row = |precision: &'static str, ms: f64| PrecisionRow {
        precision,
        compute: "",
        ms: summarize(&[ms]).unwrap(),
        tflops: 0.0,
        peak_tflops: None,
        max_abs_error: 0.0,
        max_rel_error: 0.01,
        emulated: false,
    };
    let output = PrecisionResult {
        size: 4096,
        reference: "fp64",
        rows: vec![row("fp32", 8.0), row("tf32", 2.0), row("bf16", 0.5)],
        peak_note: "",
        trace: no_trace(),
    };
    let params = PrecisionParams { size: 4096 };
    assert_eq!(
        Precision::measure("precision.bf16_speedup", &params, &output),
        Some(16.0)
    );
    let typed = Typed::<Precision> { params, output };
    assert_eq!(
        typed.measured(true).unwrap().quantity,
        "precision.bf16_speedup"
    );
}

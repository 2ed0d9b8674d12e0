//! Each GEMM case replayed on the CPU: the planned cuBLAS call (`gpu::blas::plan`,
//! `replay`) computed as cuBLAS should compute it passes the case's rule, and the
//! mistakes the rule exists for fail it — where the tolerances used before would have
//! let them through.

use super::*;
use crate::gpu::blas::{Layout, plan, replay};

/// The case's call replayed on the CPU in FP64 from its plan, inputs rounded to TF32
/// first when `tf32` (what tensor cores multiply), the output rounded to the case's
/// output type.
fn replayed(case: &GemmCase, tf32: bool) -> (Vec<f64>, Vec<f64>) {
    let (m, k, n) = case.shape;
    let (a, b) = inputs(case);
    let to_tf32 = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .map(|&x| {
                if tf32 {
                    f64::from(Format::Tf32.round(x as f32))
                } else {
                    x
                }
            })
            .collect()
    };
    let b_layout = if case.transposed {
        Layout::new(n, k).t()
    } else {
        Layout::new(k, n)
    };
    let call = plan(Layout::new(m, k), b_layout, Layout::new(m, n)).unwrap();
    assert_eq!((call.m, call.n, call.ldc), (n, m, n), "{case:?}");
    let mut c = vec![0.0; m * n];
    // cuBLAS's A is our B, its B our A (blas.rs's header).
    replay(&call, &to_tf32(&b), &to_tf32(&a), &mut c);
    let c = c.into_iter().map(|x| case.output.round(x)).collect();
    (c, reference(case, &a, &b))
}

/// The product accumulated in `acc`: `block` products are summed exactly (a tensor
/// core's dot-product step), then added to the running sum, which is rounded to `acc`
/// each time; the output rounded to the case's output type.
fn accumulated_in(acc: Dtype, case: &GemmCase, block: usize) -> (Vec<f64>, Vec<f64>) {
    let (m, k, n) = case.shape;
    let (a, b) = inputs(case);
    let at_b = |p: usize, j: usize| {
        if case.transposed {
            b[j * k + p]
        } else {
            b[p * n + j]
        }
    };
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut sum = 0.0;
            for start in (0..k).step_by(block) {
                let part: f64 = (start..(start + block).min(k))
                    .map(|p| a[i * k + p] * at_b(p, j))
                    .sum();
                sum = acc.round(sum + part);
            }
            c[i * n + j] = case.output.round(sum);
        }
    }
    (c, reference(case, &a, &b))
}

fn error((out, reference): (Vec<f64>, Vec<f64>)) -> f64 {
    max_relative_error(&out, &reference)
}

fn find(name: &str, transposed: bool) -> GemmCase {
    cases()
        .into_iter()
        .find(|c| c.name == name && c.transposed == transposed)
        .unwrap()
}

#[test]
fn every_case_passes_as_cublas_should_compute_it() {
    let cases = cases();
    assert_eq!(cases.len(), 13);
    for case in &cases {
        let e = error(replayed(case, case.expect == Expect::Tf32));
        let (ok, detail) = judge(case, e);
        assert!(ok, "{case:?}: {detail}");
        // FP32 accumulation (16 products at a time, as tensor cores do) passes too.
        if case.expect != Expect::Tf32 && case.input != Dtype::F64 {
            let e = error(accumulated_in(Dtype::F32, case, 16));
            assert!(judge(case, e).0, "{case:?}: FP32 accumulation, {e:.2e}");
        }
    }
}

#[test]
fn an_accidental_fp32_product_fails_the_tf32_check_the_old_tolerance_passed() {
    for transposed in [false, true] {
        let case = find("tf32", transposed);
        let k = case.shape.1;
        let fp32 = error(replayed(&case, false));
        assert!(fp32 <= tolerance(Format::Tf32, k), "the old rule passed it");
        let (ok, detail) = judge(&case, fp32);
        assert!(!ok, "{detail}");
        // FP32 and TF32 land far apart, on either side of the floor.
        let tf32 = error(replayed(&case, true));
        let (floor, ceiling) = limits(Expect::Tf32, k);
        assert!(fp32 < floor / 10.0, "FP32 {fp32:.2e}, floor {floor:.2e}");
        assert!(
            tf32 > 2.0 * floor && tf32 < ceiling / 2.0,
            "TF32 {tf32:.2e} in {floor:.2e}..{ceiling:.2e}"
        );
    }
}

#[test]
fn a_16_bit_accumulation_fails_the_checks_the_old_tolerances_passed() {
    for transposed in [false, true] {
        for (name, acc, format) in [
            ("fp16→fp32", Dtype::F16, Format::Fp16),
            ("bf16→fp32", Dtype::Bf16, Format::Bf16),
            ("fp16→fp16", Dtype::F16, Format::Fp16),
            ("bf16→bf16", Dtype::Bf16, Format::Bf16),
        ] {
            let case = find(name, transposed);
            let k = case.shape.1;
            // Summing 16 products exactly before each rounding is the kindest 16-bit
            // accumulation; one rounding per product is the harshest.
            for block in [16, 1] {
                let e = error(accumulated_in(acc, &case, block));
                let (ok, detail) = judge(&case, e);
                assert!(!ok, "{name}, blocks of {block}: {detail}");
                if block == 16 {
                    assert!(
                        e <= tolerance(format, k),
                        "{name}: the old tolerance passed it ({e:.2e})"
                    );
                }
            }
        }
    }
}

#[test]
fn the_rules_are_tighter_than_the_tolerances_they_replace() {
    let (m, k, n) = SHAPE;
    assert_eq!((m, k, n), (37, 53, 29));
    assert!(limits(Expect::Fp32Accumulate, k).1 < tolerance(Format::Fp16, k) / 100.0);
    let (floor, ceiling) = limits(Expect::Tf32, 128);
    assert!(floor > 0.0 && ceiling == tolerance(Format::Tf32, 128));
    // A 16-bit output may differ by one rounding of its own plus FP32 accumulation.
    let (_, out16) = limits(Expect::RoundedOutput(Format::Fp16), 1024);
    assert!(out16 > 2f64.powi(-11) && out16 < tolerance(Format::Fp16, 1024) / 10.0);
}

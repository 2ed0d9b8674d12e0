//! The start-up self-test: before a GPU serves a single student, it must compute what
//! the CPU computes. Nothing in GPU Lab has been run on most GPUs it will meet, so the
//! first contact checks every path the experiments use — a GEMM per input, output and
//! compute type against an FP64 product computed on the CPU ([`gemm`]: a wrong cuBLAS
//! argument mapping cannot hide behind a GPU-side reference, and each rule is tight
//! enough to catch a 16-bit accumulation or an FP32 product passed off as TF32), one
//! training step on the GPU against the same step on
//! the CPU, one kernel, and a pinned copy round trip compared byte for byte. Any
//! failure puts the whole server on the CPU backend, with the failing check on the
//! device card and in `/readyz`; `gpulab selftest` prints the full report.
//!
//! `GPULAB_INJECT_SELFTEST_FAILURE=1` adds a failing check, to prove the fallback on a
//! real GPU (tests/gpu.rs) and the reporting on the CPU (tests/experiments.rs).

use serde::Serialize;

use crate::cpu::Mat;
use crate::cpu::{random_matrix, to_f64};
use crate::experiments::precision::{Format, tolerance};
use crate::experiments::training::{self, TrainParams};
use crate::experiments::transfer;
use crate::experiments::{Check, Outcome};
use crate::gpu::{DeviceKind, Gpu};

pub mod gemm;

/// The environment variable that injects a failing check.
pub const INJECT: &str = "GPULAB_INJECT_SELFTEST_FAILURE";

/// The outcome of the start-up self-test, as `/readyz` shows it.
#[derive(Debug, Clone, Serialize, Default)]
pub struct FirstContact {
    /// The backend that serves: `cuda` or `cpu`.
    pub backend: DeviceKind,
    /// Its checks.
    pub checks: Vec<Check>,
    /// On the CPU backend after a GPU failed its self-test: that GPU's checks.
    pub rejected_gpu: Vec<Check>,
}

impl FirstContact {
    /// `checks` run on `backend`.
    pub fn new(backend: DeviceKind, checks: Vec<Check>) -> Self {
        Self {
            backend,
            checks,
            rejected_gpu: Vec::new(),
        }
    }

    /// `name: detail` of each failed check of the serving backend.
    pub fn failed(&self) -> Vec<String> {
        failures(&self.checks)
    }

    /// Whether every check of the serving backend passed.
    pub fn ok(&self) -> bool {
        !self.checks.iter().any(Check::failed)
    }
}

fn failures(checks: &[Check]) -> Vec<String> {
    checks
        .iter()
        .filter_map(|c| match &c.outcome {
            Outcome::Fail(detail) => Some(format!("{}: {detail}", c.name)),
            _ => None,
        })
        .collect()
}

/// `device` if `checks` all pass on it, else the reason it must not be used.
pub fn admit<D>(
    mut device: D,
    checks: impl FnOnce(&mut D) -> Vec<Check>,
) -> (Option<D>, FirstContact) {
    let report = FirstContact::new(DeviceKind::Cuda, checks(&mut device));
    if report.ok() {
        (Some(device), report)
    } else {
        (None, report)
    }
}

/// The sentence for the device card when the GPU failed its self-test.
pub fn reason(report: &FirstContact) -> String {
    format!(
        "the GPU failed its start-up self-test ({}); run `gpulab selftest` for the full report",
        report.failed().join("; ")
    )
}

/// The injected failure, when [`INJECT`] is set.
pub fn injected() -> Option<Check> {
    std::env::var_os(INJECT).map(|_| {
        Check::expect(
            "injected failure",
            false,
            format!("{INJECT} is set: this check fails on purpose"),
        )
    })
}

/// The GPU's quick checks.
pub fn gpu_checks(gpu: &mut Gpu) -> Vec<Check> {
    let mut checks = gemm::checks(gpu);
    checks.push(training_step(gpu));
    checks.push(kernel(gpu));
    checks.push(transfer::round_trips_arrive(
        gpu,
        "first contact: pinned and pageable copies host→device→host, byte for byte",
    ));
    checks.extend(injected());
    checks
}

/// The CPU backend's quick checks: its GEMM against the FP64 product, and the GPU's
/// copy round trip on the asynchronous stand-in (`gpu::standin`).
pub fn cpu_checks() -> Vec<Check> {
    let (m, k, n) = gemm::SHAPE;
    let a = random_matrix(m * k, 1);
    let b = random_matrix(k * n, 2);
    let mut c = vec![0f32; m * n];
    crate::cpu::gemm(Mat::new(&a, m, k), Mat::new(&b, k, n), 0.0, &mut c);
    let reference = product(&to_f64(&a), &to_f64(&b), m, k, n, false);
    let error = max_relative_error(&to_f64(&c), &reference);
    let limit = tolerance(Format::Fp32, k);
    let mut checks = vec![
        Check::expect(
            "first contact: CPU SGEMM vs FP64",
            error <= limit,
            format!("max relative error {error:.1e} (≤ {limit:.1e})"),
        ),
        // The GPU's round trip, on the CPU's asynchronous stand-in: the same code, with
        // every copy as late as a driver may run it.
        transfer::round_trips_arrive_on_the_stand_in(
            "first contact: pinned and pageable copies host→device→host on the asynchronous stand-in, byte for byte",
        ),
    ];
    checks.extend(injected());
    checks
}

/// One optimiser step (two, to see the update land) on the GPU and the CPU: the
/// training experiment's own check.
fn training_step(gpu: &mut Gpu) -> Check {
    let params = TrainParams {
        batch: 32,
        hidden: 16,
        steps: 2,
        log_every: 1,
        ..TrainParams::default()
    };
    training::gpu_matches_cpu(
        gpu,
        "first contact: training step, GPU loss vs CPU (fp32, Adam)".into(),
        &params,
        1e-3,
    )
}

fn kernel(gpu: &Gpu) -> Check {
    let label = "first contact: relu_f32 kernel vs CPU";
    let input: Vec<f32> = random_matrix(4099, 5)
        .into_iter()
        .map(|x| x * 8.0)
        .collect();
    let expected: Vec<f32> = input.iter().map(|x| x.max(0.0)).collect();
    match gpu.relu(&input) {
        Ok(out) => Check::expect(
            label,
            out == expected,
            format!(
                "{} of {} elements equal",
                out.iter().zip(&expected).filter(|(a, b)| a == b).count(),
                expected.len()
            ),
        ),
        Err(e) => Check::error(label, e),
    }
}

/// Row-major FP64 `A (m×k) · B`, B stored `k × n`, or `n × k` and read transposed.
fn product(a: &[f64], b: &[f64], m: usize, k: usize, n: usize, b_transposed: bool) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k)
                .map(|p| {
                    a[i * k + p]
                        * if b_transposed {
                            b[j * k + p]
                        } else {
                            b[p * n + j]
                        }
                })
                .sum();
        }
    }
    c
}

fn max_relative_error(out: &[f64], reference: &[f64]) -> f64 {
    if out.len() != reference.len() {
        return f64::INFINITY;
    }
    let scale = reference
        .iter()
        .fold(0.0f64, |m, r| m.max(r.abs()))
        .max(f64::MIN_POSITIVE);
    out.iter()
        .zip(reference)
        .fold(0.0f64, |m, (x, r)| m.max((x - r).abs()))
        / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_that_fails_any_check_is_not_admitted() {
        let pass = |_: &mut u8| vec![Check::expect("a", true, "fine")];
        let (kept, report) = admit(7u8, pass);
        assert_eq!(kept, Some(7));
        assert!(report.ok() && report.checks.len() == 1);
        let fail = |_: &mut u8| {
            vec![
                Check::expect("a", true, "fine"),
                Check::expect("gemm", false, "max relative error 3.1e-1"),
            ]
        };
        let (kept, report) = admit(7u8, fail);
        assert_eq!(kept, None);
        assert_eq!(
            report.failed(),
            vec!["gemm: max relative error 3.1e-1".to_string()]
        );
        assert!(reason(&report).contains("gemm: max relative error"));
    }

    #[test]
    fn the_fp64_reference_and_the_error_measure_can_tell_a_wrong_product() {
        let (m, k, n) = gemm::SHAPE;
        let a = to_f64(&random_matrix(m * k, 1));
        let b = to_f64(&random_matrix(k * n, 2));
        let right = product(&a, &b, m, k, n, false);
        // B stored transposed and read transposed is the same product.
        let mut bt = vec![0.0; k * n];
        for p in 0..k {
            for j in 0..n {
                bt[j * k + p] = b[p * n + j];
            }
        }
        assert!(max_relative_error(&product(&a, &bt, m, k, n, true), &right) < 1e-15);
        // Reading B without the transpose is caught by any tolerance we use.
        let wrong = product(&a, &bt, m, k, n, false);
        assert!(max_relative_error(&wrong, &right) > tolerance(Format::Bf16, k) * 10.0);
    }

    #[test]
    fn the_cpu_checks_pass_here() {
        let checks = cpu_checks();
        let injected = std::env::var_os(INJECT).is_some();
        assert_eq!(checks.iter().any(Check::failed), injected, "{checks:?}");
    }
}

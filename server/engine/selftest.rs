//! `gpulab selftest`: the start-up checks (`first_contact`), every registered
//! experiment's checks at small sizes on this machine's GPU when it has one and always
//! on its CPU, the GPU layer's
//! GEMM mapping replayed on the CPU for every shape the experiments use, and the
//! allocator playground's accounting. One line per check; the command exits non-zero
//! on any failure, and on a CPU-only machine says which GPU checks it could not run.

use std::fmt::Write as _;

use super::first_contact;
use crate::experiments::{Check, Outcome, REGISTRY};
use crate::gpu::card::cpu_card;
use crate::gpu::{DeviceKind, Gpu, blas};
use crate::playground::pool::Source;

/// Every check's outcome, with the machine it ran on.
pub struct Report {
    /// `cuda` or `cpu`.
    pub backend: DeviceKind,
    /// The device (or CPU) name.
    pub device: String,
    /// Why there is no GPU, when there is none.
    pub note: String,
    /// The checks, in order.
    pub checks: Vec<Check>,
}

impl Report {
    /// How many checks failed.
    pub fn failed(&self) -> usize {
        self.checks.iter().filter(|c| c.failed()).count()
    }

    /// One line per check and a closing count.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "selftest on {} ({})", self.device, self.backend);
        let (mut passed, mut failed, mut skipped) = (0, 0, 0);
        for check in &self.checks {
            let (mark, detail) = match &check.outcome {
                Outcome::Pass(d) => {
                    passed += 1;
                    ("PASS", d)
                }
                Outcome::Fail(d) => {
                    failed += 1;
                    ("FAIL", d)
                }
                Outcome::Skip(d) => {
                    skipped += 1;
                    ("SKIP", d)
                }
            };
            let _ = writeln!(out, "{mark}  {}: {detail}", check.name);
        }
        if !self.backend.is_cuda() {
            let _ = writeln!(out, "GPU checks not run: {} ({skipped} skipped)", self.note);
        }
        let _ = writeln!(
            out,
            "selftest: {passed} passed, {failed} failed, {skipped} skipped"
        );
        out
    }
}

/// The GEMM mapping of every layout in use, replayed on the CPU.
fn blas_mapping() -> Vec<Check> {
    blas::layouts_in_use()
        .into_iter()
        .map(|(name, a, b)| match blas::plan_error(a, b) {
            Ok(error) => Check::expect(
                format!("gpu::blas mapping: {name}"),
                error < 1e-9,
                format!("replayed cuBLAS call vs row-major product: max difference {error:.1e}"),
            ),
            Err(e) => Check::error(format!("gpu::blas mapping: {name}"), e),
        })
        .collect()
}

/// Runs every check on this machine: on its GPU when one opens — all of them, even
/// when the start-up checks fail (the server would not use that GPU; this report says
/// why) — and always the CPU's.
pub fn run() -> Report {
    let mut checks = blas_mapping();
    match Gpu::open() {
        Ok(mut gpu) => {
            checks.extend(first_contact::gpu_checks(&mut gpu));
            checks.extend(first_contact::cpu_checks());
            for experiment in REGISTRY {
                checks.extend(experiment.selftest(Some(&mut gpu)));
            }
            checks.extend(crate::playground::selftest(&Source::Device(gpu.memory())));
            let card = gpu.card();
            Report {
                backend: card.kind,
                device: card.name.clone(),
                note: card.note.clone(),
                checks,
            }
        }
        Err(reason) => {
            checks.extend(first_contact::cpu_checks());
            for experiment in REGISTRY {
                checks.extend(experiment.selftest(None));
            }
            checks.extend(crate::playground::selftest(&Source::Host));
            let card = cpu_card(&reason.to_string());
            Report {
                backend: card.kind,
                device: card.name.clone(),
                note: card.note.clone(),
                checks,
            }
        }
    }
}

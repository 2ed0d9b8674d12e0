//! `gpulab selftest`: every registered experiment's checks at small sizes on this
//! machine's backend (its GPU when it has one, and always its CPU), the GPU layer's
//! GEMM mapping replayed on the CPU for every shape the experiments use, and the
//! allocator playground's accounting. One line per check; the command exits non-zero
//! on any failure, and on a CPU-only machine says which GPU checks it could not run.

use std::fmt::Write as _;

use super::backend::Backend;
use crate::experiments::{Check, Outcome, REGISTRY};
use crate::gpu::blas;

/// Every check's outcome, with the machine it ran on.
pub struct Report {
    /// `cuda` or `cpu`.
    pub backend: &'static str,
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
        if self.backend == "cpu" {
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

/// Runs every check on this machine.
pub fn run() -> Report {
    let (mut backend, card) = Backend::open();
    let mut checks = blas_mapping();
    for experiment in REGISTRY {
        checks.extend(experiment.selftest(backend.gpu()));
    }
    checks.extend(crate::playground::selftest(&backend.memory_source()));
    Report {
        backend: card.kind,
        device: card.name.clone(),
        note: card.note.clone(),
        checks,
    }
}

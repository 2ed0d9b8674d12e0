//! Experiment: a real training run (lesson 6). A small classifier — Linear → ReLU →
//! Linear, cross-entropy over the three ticket actions (answer, escalate, block) — is
//! trained on deterministic synthetic access-ticket features with SGD or Adam, in FP32
//! or BF16 mixed precision (BF16 operands, FP32 accumulation and FP32 master weights).
//! It reports the loss curve, step time, samples per second, and the measured cost of
//! reading the loss every step against every `log_every` steps.
//!
//! [`mlp`] is the model and its initialisation; [`model`] is the CPU implementation and
//! the reference, built from [`ops`] (one function per kernel) and computed in
//! [`step`]'s reused buffers, fused row by row; [`gpu`] runs the same steps with cuBLAS
//! and our kernels, and the selftest compares the two loss curves. [`logging`] is how
//! both time the cost of reading the loss; [`timeline`] turns a run's steps into a
//! Chrome trace.

pub mod gpu;
pub mod logging;
pub mod mlp;
pub mod model;
pub mod ops;
mod pass;
pub mod profile;
pub mod step;
mod timeline;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked, no_gpu};
use super::{Experiment, ExperimentError, ParamError, Rule};
use crate::config::Limits;
use crate::gpu::Gpu;
use crate::measure::{Deadline, Summary, TRY_FEWER_STEPS};
pub use model::{CLASSES, DATASET, FEATURES};

/// Arithmetic for the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TrainPrecision {
    /// FP32 throughout.
    #[default]
    Fp32,
    /// BF16 forward GEMMs with FP32 accumulation and FP32 master weights.
    Bf16,
}

/// The optimiser.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Optim {
    /// Plain stochastic gradient descent, learning rate 0.1.
    Sgd,
    /// Adam with bias correction, learning rate 0.003.
    #[default]
    Adam,
}

/// What the student asks for.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TrainParams {
    /// Tickets per step.
    pub batch: usize,
    /// Hidden width.
    pub hidden: usize,
    /// Optimiser steps.
    pub steps: usize,
    /// Read the loss every this many steps (at most `steps`).
    pub log_every: usize,
    /// `fp32`, or `bf16` mixed precision.
    #[serde(default)]
    pub precision: TrainPrecision,
    /// `sgd` or `adam`.
    #[serde(default)]
    pub optimizer: Optim,
}

impl Default for TrainParams {
    fn default() -> Self {
        Self {
            batch: 32,
            hidden: 128,
            steps: 200,
            log_every: 10,
            precision: TrainPrecision::Fp32,
            optimizer: Optim::Adam,
        }
    }
}

impl TrainPrecision {
    /// The API's name: `fp32` or `bf16`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::Bf16 => "bf16",
        }
    }
}

impl Optim {
    /// The API's name: `sgd` or `adam`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sgd => "sgd",
            Self::Adam => "adam",
        }
    }
}

/// The fixed parts of a run — shape, data set size, optimiser constants — reported with
/// its result so a reference tool (tests/gpu/reference.py) rebuilds the same training
/// step from the result alone.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TrainSetup {
    /// Input features per ticket.
    pub features: usize,
    /// Output classes.
    pub classes: usize,
    /// Tickets in the synthetic data set; batch `s` is tickets `s·batch …`, wrapping.
    pub dataset: usize,
    /// Learning rate of the chosen optimiser.
    pub lr: f32,
    /// Adam's β1 (unused by SGD).
    pub adam_beta1: f32,
    /// Adam's β2 (unused by SGD).
    pub adam_beta2: f32,
    /// Adam's ε (unused by SGD).
    pub adam_eps: f32,
}

impl TrainSetup {
    /// The setup a run with `params` uses.
    pub fn of(params: &TrainParams) -> Self {
        Self {
            features: FEATURES,
            classes: CLASSES,
            dataset: DATASET,
            lr: params.lr(),
            adam_beta1: ops::ADAM_BETA1,
            adam_beta2: ops::ADAM_BETA2,
            adam_eps: ops::ADAM_EPS,
        }
    }
}

impl TrainParams {
    /// Learning rate for the chosen optimiser.
    pub fn lr(&self) -> f32 {
        match self.optimizer {
            Optim::Sgd => 0.1,
            Optim::Adam => 0.003,
        }
    }
}

/// One point of the loss curve.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LossPoint {
    /// Step number (1-based).
    pub step: usize,
    /// Mean cross-entropy of that step's batch.
    pub loss: f32,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TrainResult {
    /// The parameters used.
    pub params: TrainParams,
    /// The model's shape and the optimiser's constants.
    pub setup: TrainSetup,
    /// Loss every `log_every` steps (and at the last step).
    pub loss_curve: Vec<LossPoint>,
    /// Milliseconds per step.
    pub step_ms: Summary,
    /// Training throughput: batch ÷ median step time.
    pub samples_per_sec: f64,
    /// Accuracy on the whole synthetic set after training.
    pub accuracy: f64,
    /// Milliseconds per step when the loss is read every step (extra run).
    pub read_every_step_ms: f64,
    /// Milliseconds per step when it is read every `log_every` steps (extra run).
    pub read_every_n_ms: f64,
    /// On a GPU, one more step profiled kernel by kernel, each against this GPU's
    /// memory and compute ceilings (`None` on the CPU, whose step is one fused pass
    /// per row, not a sequence of kernels).
    pub kernels: Option<profile::KernelProfile>,
    /// The run's steps (and, on the GPU, its launch calls and loss reads) as a
    /// Chrome trace.
    pub trace: super::trace::Trace,
}

/// Trains on `gpu` when given, else on the CPU (break-it's logging case runs this too).
pub fn train(
    gpu: Option<&mut Gpu>,
    params: &TrainParams,
    deadline: &Deadline,
) -> Result<TrainResult, ExperimentError> {
    let deadline = deadline.saying(TRY_FEWER_STEPS);
    match gpu {
        Some(gpu) => gpu::run(gpu, params, &deadline),
        None => model::run_cpu(params, &deadline),
    }
}

/// The experiment.
pub struct Training;

impl Experiment for Training {
    const NAME: &'static str = "training";
    const DIRECTIVE: &'static str = "training-run";
    const LESSON: &'static str = "training-step";
    const TITLE: &'static str = "A real training run";
    const SUMMARY: &'static str =
        "Train the small MLP; loss curve, step time, samples/s, logging cost";
    type Params = TrainParams;
    type Output = TrainResult;

    const PREDICT: &'static [Quantity] = &[Quantity {
        key: "training.log_every_step_slowdown",
        unit: "×",
        scale: Scale::Ratio,
        on: On::Any,
        when: None,
    }];

    fn measure(key: &str, _: &TrainParams, r: &TrainResult) -> Option<f64> {
        (key == "training.log_every_step_slowdown" && r.read_every_n_ms > 0.0)
            .then(|| r.read_every_step_ms / r.read_every_n_ms)
    }

    fn rules(limits: &Limits) -> Vec<Rule> {
        let range = |field, max: usize, cap| Rule::Range {
            field,
            min: 1,
            max: max as u64,
            cap,
        };
        vec![
            range("batch", DATASET, false),
            range("hidden", limits.max_hidden, true),
            range("steps", limits.max_train_steps, true),
            range("log_every", limits.max_train_steps, true),
            precision_rule(),
            optimizer_rule(),
        ]
    }

    fn check(params: &TrainParams, _: &Limits) -> Result<(), ParamError> {
        if params.log_every > params.steps {
            return Err(ParamError::Invalid(
                "log_every must be between 1 and steps".into(),
            ));
        }
        Ok(())
    }

    fn method(p: &TrainParams) -> String {
        format!(
            "Linear({f}, {h}) → ReLU → Linear({h}, 3), cross-entropy, {opt}, {prec}; {dataset} synthetic tickets; step time per step, median over all steps (GPU: CUDA events between consecutive steps; CPU: host clock); samples/s = batch / median step time (robust to one slow step); logging cost from extra {probe}-step runs reading the loss every step and every {n} steps, {runs} of each, alternating, fastest of each kept",
            f = FEATURES,
            h = p.hidden,
            opt = p.optimizer.name(),
            prec = p.precision.name(),
            dataset = DATASET,
            probe = p.steps.min(model::LOGGING_PROBE_STEPS),
            n = p.log_every,
            runs = logging::PROBE_RUNS,
        )
    }

    fn run_gpu(
        gpu: &mut Gpu,
        params: &TrainParams,
        deadline: &Deadline,
    ) -> Result<TrainResult, ExperimentError> {
        train(Some(gpu), params, deadline)
    }

    fn run_cpu(params: &TrainParams, deadline: &Deadline) -> Result<TrainResult, ExperimentError> {
        train(None, params, deadline)
    }

    fn table(params: &TrainParams, r: &TrainResult) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "MLP {FEATURES}→{}→{CLASSES}, batch {}, {} steps, {}, {}",
            params.hidden,
            params.batch,
            params.steps,
            params.optimizer.name(),
            params.precision.name()
        );
        let _ = writeln!(out, "{:>6}  {:>8}", "step", "loss");
        for point in &r.loss_curve {
            let _ = writeln!(out, "{:>6}  {:>8.4}", point.step, point.loss);
        }
        let _ = writeln!(
            out,
            "step time      : {:.3} ms median [{:.3}, {:.3}]",
            r.step_ms.median, r.step_ms.min, r.step_ms.max
        );
        let _ = writeln!(out, "throughput     : {:.0} samples/s", r.samples_per_sec);
        let _ = writeln!(out, "accuracy       : {:.1}%", r.accuracy * 100.0);
        let _ = writeln!(
            out,
            "loss read every step: {:.3} ms/step; every {}: {:.3} ms/step",
            r.read_every_step_ms, params.log_every, r.read_every_n_ms
        );
        out
    }

    fn describe(p: &TrainParams) -> String {
        use crate::format::thousands;
        format!(
            "Trains a small classifier on synthetic access-ticket data (batch {}, hidden width {}, {} steps, loss read every {} steps, {}) and reports the loss curve, step time, samples per second and the time lost to reading the loss every step.",
            thousands(p.batch as f64),
            thousands(p.hidden as f64),
            thousands(p.steps as f64),
            thousands(p.log_every as f64),
            p.precision.name()
        )
    }

    fn selftest(gpu: Option<&mut Gpu>) -> Vec<Check> {
        let deadline = Deadline::after(std::time::Duration::from_secs(120));
        let small = |precision, optimizer| TrainParams {
            batch: 64,
            hidden: 32,
            steps: 60,
            log_every: 10,
            precision,
            optimizer,
        };
        let cases = [
            (TrainPrecision::Fp32, Optim::Adam, 1e-3),
            (TrainPrecision::Fp32, Optim::Sgd, 1e-3),
            (TrainPrecision::Bf16, Optim::Adam, 2e-2),
        ];
        let mut checks = vec![model::gradient_check()];
        for (precision, optimizer, _) in cases {
            checks.push(checked(
                format!(
                    "training: CPU loss falls ({}, {})",
                    precision.name(),
                    optimizer.name()
                ),
                model::run_cpu(&small(precision, optimizer), &deadline),
                |r| {
                    let (first, last) = (
                        r.loss_curve[0].loss,
                        r.loss_curve.last().map_or(f32::NAN, |p| p.loss),
                    );
                    (last < first * 0.9, format!("loss {first:.4} → {last:.4}"))
                },
            ));
        }
        match gpu {
            Some(gpu) => {
                for (precision, optimizer, tolerance) in cases {
                    let params = small(precision, optimizer);
                    let name = format!(
                        "training: GPU loss curve vs CPU ({}, {})",
                        precision.name(),
                        optimizer.name()
                    );
                    checks.push(gpu_matches_cpu(gpu, name, &params, tolerance));
                }
            }
            None => checks.push(no_gpu("training: GPU loss curves vs CPU")),
        }
        checks
    }
}

/// Check `name`: training with `params` on the GPU gives the CPU's loss curve, each
/// point within `tolerance` (relative). The training selftest runs it at small sizes,
/// and the start-up self-test (`engine::first_contact`) runs it once.
pub fn gpu_matches_cpu(gpu: &mut Gpu, name: String, params: &TrainParams, tolerance: f64) -> Check {
    let deadline = Deadline::after(std::time::Duration::from_secs(60));
    let curves = model::run_cpu(params, &deadline)
        .and_then(|cpu| gpu::run(gpu, params, &deadline).map(|gpu| (gpu, cpu)));
    checked(name, curves, |(g, c)| {
        let worst = g
            .loss_curve
            .iter()
            .zip(&c.loss_curve)
            .map(|(a, b)| f64::from((a.loss - b.loss).abs() / b.loss.abs().max(1e-3)))
            .fold(0.0, f64::max);
        (
            g.loss_curve.len() == c.loss_curve.len()
                && !c.loss_curve.is_empty()
                && worst <= tolerance,
            format!(
                "largest relative loss difference {worst:.2e} over {} points (tolerance {tolerance:.0e})",
                g.loss_curve.len()
            ),
        )
    })
}

/// The `precision` parameter's rule (the training experiment's and the labs').
pub(crate) fn precision_rule() -> Rule {
    Rule::OneOf {
        field: "precision",
        choices: &["fp32", "bf16"],
    }
}

/// The `optimizer` parameter's rule (the training experiment's and the labs').
pub(crate) fn optimizer_rule() -> Rule {
    Rule::OneOf {
        field: "optimizer",
        choices: &["sgd", "adam"],
    }
}

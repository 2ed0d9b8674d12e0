//! Experiment: the tuning labs (issue 28). A learner turns the knobs a lesson teaches on
//! a real training loop and the hardware grades the result: the lab's slow baseline,
//! the learner's candidate and the lab's known-good reference run in the same job,
//! interleaved (A B R A B R …, after one discarded warm-up of each), and
//! [`grade`] compares them on medians with their spread. One experiment with a `lab`
//! parameter serves the five labs ([`catalog`]), so they share one route, one panel and
//! the same caps, rate limits and queue as every other experiment.
//!
//! [`cpu`] is the loop on the CPU backend, [`gpu`] the same loop on the GPU;
//! [`memory`] replays a setting through the allocator model for the memory budget.
//! [`result`] assembles the graded result and its explanation; [`timeline`] draws the
//! job's runs and their steps as a Chrome trace, one track per setting.

pub mod catalog;
pub mod cpu;
pub mod gpu;
pub mod grade;
pub mod memory;
pub mod result;
pub mod sample;
pub mod timeline;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked};
use super::training::model::Tickets;
use super::training::{self, Optim, TrainPrecision};
use super::{Experiment, ExperimentError, ParamError, Rule};
use crate::config::Limits;
use crate::gpu::Gpu;
use crate::measure::Deadline;
pub use catalog::{ALL, Knob, Knobs, Lab, LabId, lab};
pub use grade::Verdict;
pub use result::LabResult;

/// Measured rounds of each setting (after one warm-up each): enough for quartiles.
pub const ROUNDS: usize = 7;
/// Largest batch a candidate may ask for.
pub const MAX_BATCH: usize = 1024;
/// Most micro-batches per optimiser step.
pub const MAX_ACCUMULATION: usize = 16;
/// Sparsest loss reading a candidate may ask for.
pub const MAX_LOG_EVERY: usize = 100;

/// What the learner submits: the lab and its knobs. Knobs the lab does not offer are
/// ignored (the lab's baseline value is used and the result says so).
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LabParams {
    /// `feed-the-gpu`, `stop-waiting`, `fit-the-budget`, `mixed-precision` or
    /// `slow-loop-doctor`.
    pub lab: LabId,
    /// Tickets per optimiser step.
    pub batch: usize,
    /// Keep the data set on the device and read batches in place.
    pub data_on_device: bool,
    /// Stage host batches in page-locked memory.
    pub pinned: bool,
    /// Copy asynchronously, prefetching the next batch on a side stream.
    pub non_blocking: bool,
    /// Read the loss every this many steps.
    pub log_every: usize,
    /// Synchronise before the step timer reads the clock.
    pub timer_sync: bool,
    /// `fp32` or `bf16`.
    pub precision: TrainPrecision,
    /// `sgd` or `adam`.
    pub optimizer: Optim,
    /// Micro-batches per optimiser step (gradient accumulation).
    pub accumulation: usize,
    /// Recompute layer 1's activations in the backward pass.
    pub recompute: bool,
}

impl Default for LabParams {
    fn default() -> Self {
        Self::baseline_of(LabId::FeedTheGpu)
    }
}

impl LabParams {
    /// The parameters that ask for `id`'s baseline itself.
    pub fn baseline_of(id: LabId) -> Self {
        let k = lab(id).baseline;
        Self {
            lab: id,
            batch: k.batch,
            data_on_device: k.data_on_device,
            pinned: k.pinned,
            non_blocking: k.non_blocking,
            log_every: k.log_every,
            timer_sync: k.timer_sync,
            precision: k.precision,
            optimizer: k.optimizer,
            accumulation: k.accumulation,
            recompute: k.recompute,
        }
    }

    /// The candidate: the lab's baseline with the lab's own knobs taken from here.
    pub fn candidate(&self) -> Knobs {
        let l = lab(self.lab);
        let mut k = l.baseline;
        let take = |knob| l.has(knob);
        if take(Knob::Batch) {
            k.batch = self.batch;
        }
        if take(Knob::DataOnDevice) {
            k.data_on_device = self.data_on_device;
        }
        if take(Knob::Pinned) {
            k.pinned = self.pinned;
        }
        if take(Knob::NonBlocking) {
            k.non_blocking = self.non_blocking;
        }
        if take(Knob::LogEvery) {
            k.log_every = self.log_every;
        }
        if take(Knob::TimerSync) {
            k.timer_sync = self.timer_sync;
        }
        if take(Knob::Precision) {
            k.precision = self.precision;
        }
        if take(Knob::Optimizer) {
            k.optimizer = self.optimizer;
        }
        if take(Knob::Accumulation) {
            k.accumulation = self.accumulation;
        }
        if take(Knob::Recompute) {
            k.recompute = self.recompute;
        }
        k
    }
}

/// Every round of each setting (baseline, candidate, reference) and the job's trace.
type Rounds = ([Vec<sample::RunSample>; 3], super::trace::Trace);

/// Runs `l`'s baseline, `candidate` and reference interleaved with `run_one`, each
/// run drawn on the trace (the warm-ups too: they ran, though they are not graded).
fn measure(
    l: &Lab,
    (candidate, reference): (&Knobs, &Knobs),
    on_gpu: bool,
    mut run_one: impl FnMut(&Knobs) -> Result<sample::RunSample, ExperimentError>,
) -> Result<Rounds, ExperimentError> {
    let settings = [l.baseline, *candidate, *reference];
    let mut trace = timeline::LabTrace::new(on_gpu);
    for (i, s) in settings.iter().enumerate() {
        // Warm-up: first-touch page faults, caches, clocks.
        trace.run(i, "warm-up", &run_one(s)?);
    }
    let mut out: [Vec<sample::RunSample>; 3] = Default::default();
    for round in 1..=ROUNDS {
        for (i, s) in settings.iter().enumerate() {
            let run = run_one(s)?;
            trace.run(i, &format!("round {round}"), &run);
            out[i].push(run);
        }
    }
    Ok((out, trace.finish()))
}

/// The experiment.
pub struct Labs;

impl Experiment for Labs {
    const NAME: &'static str = "lab";
    const DIRECTIVE: &'static str = "tuning-lab";
    const LESSON: &'static str = "slow-or-broken";
    const TITLE: &'static str =
        "Tuning lab: make the loop faster or smaller, graded by measurement";
    const SUMMARY: &'static str = "Run a tuning lab: baseline, your settings and the reference, interleaved, graded on medians";
    type Params = LabParams;
    type Output = LabResult;
    const PREDICT: &'static [Quantity] = &[Quantity {
        key: "lab.speedup",
        unit: "×",
        scale: Scale::Ratio,
        on: On::Any,
        when: None,
    }];

    /// Your settings' median samples per second over the slow loop's.
    fn measure(key: &str, _: &LabParams, r: &LabResult) -> Option<f64> {
        let (yours, slow) = (
            r.candidate.samples_per_sec.median,
            r.baseline.samples_per_sec.median,
        );
        (key == "lab.speedup" && slow > 0.0).then_some(yours / slow)
    }

    fn rules(_: &Limits) -> Vec<Rule> {
        let range = |field, min: u64, max: usize| Rule::Range {
            field,
            min,
            max: max as u64,
            cap: false,
        };
        vec![
            Rule::OneOf {
                field: "lab",
                choices: &[
                    "feed-the-gpu",
                    "stop-waiting",
                    "fit-the-budget",
                    "mixed-precision",
                    "slow-loop-doctor",
                ],
            },
            range("batch", 1, MAX_BATCH),
            range("log_every", 1, MAX_LOG_EVERY),
            range("accumulation", 1, MAX_ACCUMULATION),
            training::precision_rule(),
            training::optimizer_rule(),
        ]
    }

    fn check(p: &LabParams, _: &Limits) -> Result<(), ParamError> {
        let k = p.candidate();
        if !k.batch.is_multiple_of(k.accumulation) {
            return Err(ParamError::Invalid(format!(
                "accumulation must divide the batch ({}) evenly",
                k.batch
            )));
        }
        Ok(())
    }

    fn method(p: &LabParams) -> String {
        let l = lab(p.lab);
        format!(
            "{}: baseline, your settings and the lab's reference, each {} training steps of Linear(32, {h}) → ReLU → Linear({h}, 3) per run, one warm-up run of each then {ROUNDS} rounds interleaved (A B R …); samples/s = tickets ÷ wall time from the first enqueue to the last step's end; graded on quartiles (your Q1 against the baseline's Q3 must reach the target; below it even on your Q3 against its Q1 is a miss; between is inconclusive); speed targets are the lab's nominal factor or, where this backend's reference reaches less, three quarters of the way to the reference's gain",
            l.title,
            l.steps,
            h = l.baseline.hidden,
        )
    }

    fn run_gpu(
        g: &mut Gpu,
        p: &LabParams,
        deadline: &Deadline,
    ) -> Result<LabResult, ExperimentError> {
        let l = lab(p.lab);
        let data = Tickets::generate();
        let candidate = p.candidate();
        let (runs, trace) = measure(&l, (&candidate, &l.reference), true, |k| {
            gpu::run(g, k, l.steps, &data, deadline)
        })?;
        Ok(result::assemble(&l, &candidate, &l.reference, &runs, trace))
    }

    fn run_cpu(p: &LabParams, deadline: &Deadline) -> Result<LabResult, ExperimentError> {
        let l = lab(p.lab);
        let data = Tickets::generate();
        let (candidate, reference) = (p.candidate(), l.cpu_reference());
        let (runs, trace) = measure(&l, (&candidate, &reference), false, |k| {
            cpu::run(k, l.steps, &data, deadline)
        })?;
        Ok(result::assemble(&l, &candidate, &reference, &runs, trace))
    }

    fn table(_: &LabParams, r: &LabResult) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{} on {}: {}", r.title, r.backend, r.verdict.word());
        let _ = writeln!(
            out,
            "{:>10}  {:>14}  {:>12}",
            "setting", "samples/s", "final loss"
        );
        for (name, m) in [
            ("baseline", &r.baseline),
            ("yours", &r.candidate),
            ("reference", &r.reference),
        ] {
            let _ = writeln!(
                out,
                "{name:>10}  {:>14.0}  {:>12.4}",
                m.samples_per_sec.median, m.final_loss
            );
        }
        for c in &r.criteria {
            let _ = writeln!(out, "- {}: {} ({})", c.name, c.verdict.word(), c.detail);
        }
        out
    }

    fn describe(p: &LabParams) -> String {
        result::describe(&lab(p.lab))
    }

    fn selftest(_: Option<&mut Gpu>) -> Vec<Check> {
        let deadline = Deadline::after(std::time::Duration::from_secs(60));
        let data = Tickets::generate();
        let l = lab(LabId::StopWaiting);
        vec![checked(
            "lab: a synced timer reads the true step time on the CPU",
            cpu::run(&l.reference, l.steps, &data, &deadline),
            |s| {
                (
                    (0.9..=1.1).contains(&s.timer_ratio),
                    format!("timer ÷ true = {:.3}", s.timer_ratio),
                )
            },
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_a_lab_does_not_offer_keep_the_baseline() {
        let p = LabParams {
            lab: LabId::MixedPrecision,
            batch: 8,
            precision: TrainPrecision::Bf16,
            ..LabParams::baseline_of(LabId::MixedPrecision)
        };
        let k = p.candidate();
        assert_eq!(k.batch, lab(LabId::MixedPrecision).baseline.batch);
        assert_eq!(k.precision, TrainPrecision::Bf16);
        let bad = LabParams {
            lab: LabId::FitTheBudget,
            accumulation: 3,
            ..LabParams::baseline_of(LabId::FitTheBudget)
        };
        assert!(Labs::check(&bad, &Limits::default()).is_err());
    }
}

//! Experiment: the tuning labs (issue 28). A learner turns the knobs a lesson teaches on
//! a real training loop and the hardware grades the result: the lab's slow baseline,
//! the learner's candidate and the lab's known-good reference run in the same job,
//! interleaved (A B R A B R …, after one discarded warm-up of each), and
//! [`grade`] compares them on medians with their spread. One experiment with a `lab`
//! parameter serves the five labs ([`catalog`]), so they share one route, one panel and
//! the same caps, rate limits and queue as every other experiment.
//!
//! [`knobs`] are what a learner turns, [`params`] what a learner submits; [`cpu`] is
//! the loop on the CPU backend, [`gpu`] the same loop on the GPU;
//! [`memory`] replays a setting through the allocator model for the memory budget.
//! [`criteria`] grades each of a lab's goals, [`result`] assembles the graded result
//! and its explanation; [`timeline`] draws the job's runs and their steps as a Chrome
//! trace, one track per setting; [`recorded_tests`] re-grades runs recorded on real
//! machines.

pub mod catalog;
pub mod cpu;
pub mod criteria;
pub mod gpu;
pub mod grade;
pub mod knobs;
pub mod memory;
pub mod params;
pub mod result;
pub mod sample;
pub mod timeline;

#[cfg(test)]
mod recorded_tests;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked};
use super::training;
#[cfg(test)]
use super::training::TrainPrecision;
use super::training::model::Tickets;
use super::{Experiment, ExperimentError, ParamError, Rule};
use crate::config::Limits;
use crate::db::lab_attempts::LabAttempt;
use crate::gpu::Gpu;
use crate::measure::Deadline;
pub use catalog::{ALL, Lab, LabId, lab};
pub use grade::Verdict;
pub use knobs::{Knob, Knobs};
pub use params::LabParams;
pub use result::LabResult;

/// Measured rounds of each setting (after one warm-up each): enough for quartiles.
pub const ROUNDS: usize = 7;
/// Shortest sample: a run shorter than this is repeated back to back to make one.
pub const MIN_SAMPLE: Duration = Duration::from_millis(40);
/// Most back-to-back runs in one sample.
pub const MAX_REPEATS: usize = 32;
/// Largest batch a candidate may ask for.
pub const MAX_BATCH: usize = 1024;
/// Most micro-batches per optimiser step.
pub const MAX_ACCUMULATION: usize = 16;
/// Sparsest loss reading a candidate may ask for.
pub const MAX_LOG_EVERY: usize = 100;

/// Every round of each setting (baseline, candidate, reference) and the job's trace.
type Rounds = ([Vec<sample::RunSample>; 3], super::trace::Trace);

/// Runs `l`'s baseline, `candidate` and reference interleaved with `run_one`, each
/// run drawn on the trace (the warm-ups too: they ran, though they are not graded).
/// Each round's sample of a setting spans at least [`MIN_SAMPLE`]: a setting whose run
/// is shorter is run back to back often enough (sized from its warm-up run) and the
/// repeats make one sample, so a scheduler's time slice on a busy box is a small part
/// of every sample instead of the whole of some.
fn measure(
    l: &Lab,
    (candidate, reference): (&Knobs, &Knobs),
    on_gpu: bool,
    mut run_one: impl FnMut(&Knobs) -> Result<sample::RunSample, ExperimentError>,
) -> Result<Rounds, ExperimentError> {
    let settings = [l.baseline, *candidate, *reference];
    let mut trace = timeline::LabTrace::new(on_gpu);
    let mut repeats = [1usize; 3];
    for (i, s) in settings.iter().enumerate() {
        // Warm-up: first-touch page faults, caches, clocks; its length sizes the repeats.
        let started = Instant::now();
        let warm = run_one(s)?;
        repeats[i] = repeats_for(started.elapsed());
        trace.sample(i, "warm-up", std::slice::from_ref(&warm));
    }
    let mut out: [Vec<sample::RunSample>; 3] = Default::default();
    for round in 1..=ROUNDS {
        for (i, s) in settings.iter().enumerate() {
            let runs = (0..repeats[i])
                .map(|_| run_one(s))
                .collect::<Result<Vec<_>, _>>()?;
            trace.sample(i, &format!("round {round}"), &runs);
            out[i].push(sample::RunSample::combine(&runs));
        }
    }
    Ok((out, trace.finish()))
}

/// Back-to-back runs that make one sample of a setting whose run took `one`.
fn repeats_for(one: Duration) -> usize {
    let needed = MIN_SAMPLE.as_secs_f64() / one.as_secs_f64().max(1e-6);
    (needed.ceil() as usize).clamp(1, MAX_REPEATS)
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

    fn lab_attempt(r: &LabResult) -> Option<LabAttempt> {
        Some(r.attempt())
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
        let size = match l.gpu_size {
            Some((b, h)) => format!(
                "H = {h} and batch {b} on a GPU, H = {} and batch {} on the CPU",
                l.baseline.hidden, l.baseline.batch
            ),
            None => format!("H = {}", l.baseline.hidden),
        };
        format!(
            "{}: baseline, your settings and the lab's reference, each {} training steps of Linear(32, H) → ReLU → Linear(H, 3) per run ({size}), one warm-up run of each then {ROUNDS} rounds interleaved (A B R …), a run shorter than {} ms repeated back to back to make one sample of at least that; samples/s = tickets ÷ wall time from the first enqueue to the last step's end; graded on each round's ratio of your sample to the baseline's (the ratios' first quartile must reach the target; their third quartile below it is a miss; between is inconclusive); speed targets are the lab's nominal factor or, where this backend's reference reaches less, three quarters of the way to the reference's gain",
            l.title,
            l.steps,
            MIN_SAMPLE.as_millis(),
        )
    }

    fn run_gpu(
        g: &mut Gpu,
        p: &LabParams,
        deadline: &Deadline,
    ) -> Result<LabResult, ExperimentError> {
        let l = lab(p.lab).on_gpu();
        let data = Tickets::generate();
        let candidate = l.sized_for_gpu(p.candidate());
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

    fn selftest(gpu: Option<&mut Gpu>) -> Vec<Check> {
        let deadline = Deadline::after(std::time::Duration::from_secs(60));
        let data = Tickets::generate();
        let l = lab(LabId::StopWaiting);
        let mut checks = vec![checked(
            "lab: a synced timer reads the true step time on the CPU",
            cpu::run(&l.reference, l.steps, &data, &deadline),
            |s| {
                (
                    (0.9..=1.1).contains(&s.timer_ratio),
                    format!("timer ÷ true = {:.3}", s.timer_ratio),
                )
            },
        )];
        if let Some(g) = gpu {
            // Four micro-batches of 16 summed on the device are one step of 64: the
            // same loss after ten SGD steps, up to FP32 summation order.
            let one = Knobs {
                batch: 64,
                data_on_device: true,
                log_every: 100,
                optimizer: training::Optim::Sgd,
                ..knobs::SLOW
            };
            let four = Knobs {
                accumulation: 4,
                ..one
            };
            let runs = gpu::run(g, &one, 10, &data, &deadline)
                .and_then(|a| Ok((a, gpu::run(g, &four, 10, &data, &deadline)?)));
            checks.push(checked(
                "lab: four accumulated micro-batches train like one batch on the GPU",
                runs,
                |(a, b)| {
                    let gap = f64::from(
                        (a.final_loss - b.final_loss).abs() / a.final_loss.abs().max(1e-6),
                    );
                    (
                        gap < 1e-3 && a.final_loss < a.first_loss,
                        format!(
                            "loss {:.5} → {:.5} in one batch, {:.5} → {:.5} in four ({:.2e} apart)",
                            a.first_loss, a.final_loss, b.first_loss, b.final_loss, gap
                        ),
                    )
                },
            ));
        }
        checks
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

    #[test]
    fn short_runs_are_repeated_to_make_a_sample_of_at_least_min_sample() {
        assert_eq!(repeats_for(MIN_SAMPLE * 2), 1);
        assert_eq!(repeats_for(MIN_SAMPLE), 1);
        assert_eq!(repeats_for(MIN_SAMPLE / 4), 4);
        assert_eq!(repeats_for(MIN_SAMPLE / 3 + Duration::from_micros(1)), 3);
        assert_eq!(repeats_for(Duration::ZERO), MAX_REPEATS);
        let mut lengths = Vec::new();
        let l = lab(LabId::StopWaiting);
        let (runs, _) = measure(&l, (&l.reference, &l.reference), false, |k| {
            lengths.push(k.log_every);
            // A run of 10 ms: four of them make a sample.
            let clock = sample::RunClock::start(0);
            std::thread::sleep(Duration::from_millis(10));
            Ok(sample::RunSample {
                samples_per_sec: 1000.0,
                timer_ratio: 1.0,
                first_loss: 1.0,
                final_loss: 0.5,
                profile: sample::TimeProfile::default(),
                clock,
            })
        })
        .unwrap();
        assert!(runs.iter().all(|r| r.len() == ROUNDS));
        // Three warm-ups, then each sample of up to 4 runs (a slow sleep may need fewer).
        assert!(lengths.len() > 3 + 3 * ROUNDS, "{}", lengths.len());
        assert!(lengths.len() <= 3 + 3 * ROUNDS * 4, "{}", lengths.len());
    }
}

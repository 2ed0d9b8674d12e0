//! The grading rule against runs recorded on a real machine (`tests/labs/record.sh`):
//! each recorded case's three settings are re-graded through [`super::result::assemble`]
//! and must come out as the case's measurements say they should, for the reason
//! written beside each. The recordings keep the per-round samples exactly as measured,
//! so a change to the rule is tried on the noise of a real box, quiet and busy.

use serde::Deserialize;

use super::catalog::Knobs;
use super::grade::Verdict;
use super::result::{LabResult, assemble};
use super::sample::{RunClock, RunSample, TimeProfile};
use super::{LabId, lab};
use crate::experiments::trace::{Trace, TraceBuilder};

#[derive(Deserialize)]
struct Recording {
    cpu: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    label: String,
    lab: LabId,
    load_average: f64,
    backend: String,
    baseline: Setting,
    candidate: Setting,
    reference: Setting,
}

#[derive(Deserialize)]
struct Setting {
    knobs: Knobs,
    samples: Vec<f64>,
    timer_ratio: Vec<f64>,
    first_loss: f32,
    final_loss: f32,
}

impl Setting {
    fn runs(&self) -> Vec<RunSample> {
        self.samples
            .iter()
            .zip(&self.timer_ratio)
            .map(|(&samples_per_sec, &timer_ratio)| RunSample {
                samples_per_sec,
                timer_ratio,
                first_loss: self.first_loss,
                final_loss: self.final_loss,
                profile: TimeProfile::default(),
                clock: RunClock::start(0),
            })
            .collect()
    }
}

/// Two cores of an Intel Xeon, recorded while three builds ran beside it (load ≈ 6.5).
const BUSY_XEON: &str = include_str!("recorded/intel-xeon-2-cores-busy.json");

/// An empty trace that says which backend ran the recording (what `assemble` reads).
fn trace_for(on_gpu: bool) -> Trace {
    TraceBuilder::new("tuning lab", on_gpu, "recorded").finish()
}

fn regrade(recording: &str) -> Vec<(String, f64, LabResult)> {
    let r: Recording = serde_json::from_str(recording).expect("a recording");
    assert!(!r.cpu.is_empty());
    r.cases
        .into_iter()
        .map(|c| {
            let l = lab(c.lab);
            assert_eq!(
                c.baseline.knobs, l.baseline,
                "{}: the lab's baseline",
                c.label
            );
            let runs = [c.baseline.runs(), c.candidate.runs(), c.reference.runs()];
            assert!(runs.iter().all(|r| r.len() >= 5), "{}: rounds", c.label);
            let trace = trace_for(c.backend == "cuda");
            let graded = assemble(&l, &c.candidate.knobs, &c.reference.knobs, &runs, trace);
            (c.label, c.load_average, graded)
        })
        .collect()
}

fn verdict_of<'a>(graded: &'a [(String, f64, LabResult)], label: &str) -> &'a LabResult {
    &graded
        .iter()
        .find(|(l, _, _)| l == label)
        .unwrap_or_else(|| panic!("no recorded case {label}"))
        .2
}

#[test]
fn a_busy_box_grades_what_it_can_and_calls_the_rest_inconclusive() {
    let graded = regrade(BUSY_XEON);
    assert!(
        graded.iter().all(|(_, load, _)| *load > 4.0),
        "recorded busy"
    );
    let expect = |label: &str, want: Verdict, why: &str| {
        let r = verdict_of(&graded, label);
        assert_eq!(r.verdict, want, "{label}: {why}\n{:#?}", r.criteria);
    };
    // Effects that do not depend on the clock hold however busy the box is.
    expect(
        "budget-accumulate-4",
        Verdict::Pass,
        "four micro-batches cut the modelled peak under 60% and keep 3× the speed floor",
    );
    expect(
        "budget-bf16-only",
        Verdict::Fail,
        "BF16 alone stores only the ReLU output in 2 bytes (z1, the gradients and the FP32 master weights stay, BF16 weight copies are added): the peak stays over budget",
    );
    expect(
        "stop-no-timer-sync",
        Verdict::Fail,
        "without a sync the timer reads 0.71-0.87 of the true step time, all below 0.9",
    );
    expect(
        "stop-reference",
        Verdict::Pass,
        "a synced timer reads 0.88-1.0, its middle half inside ±10%; speed is not graded on a CPU",
    );
    expect(
        "precision-bf16",
        Verdict::Pass,
        "the loss lands within 2% of FP32's; emulated BF16 is no faster, so speed is not graded",
    );
    expect(
        "feed-pinned-only",
        Verdict::Fail,
        "pinned memory does nothing on a CPU: the rounds' ratios stay under the target",
    );
    // The busy box squeezed and scattered the reference's own gain (its middle half
    // spans more than 1.5×): no target can be sized from it, so no speed verdict.
    for label in [
        "feed-reference",
        "feed-batch-64",
        "doctor-reference",
        "doctor-batch-32",
    ] {
        let r = verdict_of(&graded, label);
        assert_eq!(
            r.verdict,
            Verdict::Inconclusive,
            "{label}\n{:#?}",
            r.criteria
        );
        let g = r.reference_gain.expect("a reference gain");
        assert!(g.high > 1.5 * g.low, "{label}: {g:?}");
    }
}

#[test]
fn the_baseline_run_as_a_candidate_never_passes_on_recorded_noise() {
    // Every recorded baseline, graded as if it were the learner's settings against
    // itself: the same measurements cannot be an improvement.
    let r: Recording = serde_json::from_str(BUSY_XEON).unwrap();
    for c in r.cases {
        let l = lab(c.lab);
        let base = c.baseline.runs();
        let runs = [base.clone(), base, c.reference.runs()];
        let graded = assemble(&l, &l.baseline, &c.reference.knobs, &runs, trace_for(false));
        assert_eq!(graded.verdict, Verdict::Fail, "{}", c.label);
    }
}

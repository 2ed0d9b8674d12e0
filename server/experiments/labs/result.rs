//! A lab's graded result: the three settings' measurements, each criterion with its
//! verdict and the numbers behind it, the knobs that do nothing on this backend, and a
//! short explanation in the lesson's terms, and the job's trace. Also the no-JavaScript
//! text of the panel.

use serde::Serialize;

use super::catalog::Lab;
pub use super::criteria::Criterion;
use super::criteria::{self, changed};
use super::grade::{Ratio, Verdict};
use super::knobs::Knobs;
use super::sample::{Measured, RunSample, measured};
use crate::db::lab_attempts::{CriterionLine, LabAttempt, Summary};
use crate::format::thousands;
use crate::gpu::DeviceKind;

/// A knob set away from the baseline that does nothing on this backend.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Inert {
    /// The knob's parameter name.
    pub knob: &'static str,
    /// Why it does nothing here.
    pub why: &'static str,
}

/// The graded result.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LabResult {
    /// The lab.
    pub lab: super::LabId,
    /// Its title.
    pub title: &'static str,
    /// `cuda` or `cpu`.
    pub backend: DeviceKind,
    /// All criteria combined.
    pub verdict: Verdict,
    /// Share of the graded criteria that passed, in percent (the gradebook's score).
    pub score_percent: f64,
    /// Each criterion.
    pub criteria: Vec<Criterion>,
    /// The lab's slow starting point.
    pub baseline: Measured,
    /// Your settings.
    pub candidate: Measured,
    /// The lab's known-good settings on this backend.
    pub reference: Measured,
    /// Knobs you changed that do nothing on this backend (not graded).
    pub inert: Vec<Inert>,
    /// The knobs of this lab, with the lesson section that teaches each.
    pub knobs: Vec<KnobLink>,
    /// What the measurements say, in the lesson's terms.
    pub explanation: Vec<String>,
    /// The lab's nominal speed target (candidate ÷ baseline samples/s), if it has one.
    pub nominal_speedup: Option<f64>,
    /// What the lab's known-good reference gained over the baseline in this run.
    pub reference_gain: Option<Ratio>,
    /// Optimiser steps per run (a run's samples/s is batch × this ÷ its wall time).
    pub steps: usize,
    /// Every run of the job (warm-ups included) and its steps, one track per setting
    /// (Chrome Trace Event format).
    pub trace: crate::experiments::trace::Trace,
}

/// A knob and where it is taught.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct KnobLink {
    /// The parameter name.
    pub knob: &'static str,
    /// The lesson page that teaches it.
    pub lesson: &'static str,
    /// Why it does nothing on this backend, if it does nothing.
    pub inert_here: Option<&'static str>,
}

impl LabResult {
    /// What the gradebook keeps of this graded run.
    pub fn attempt(&self) -> LabAttempt {
        LabAttempt {
            lab: self.lab.name(),
            verdict: self.verdict.name(),
            score_percent: self.score_percent,
            summary: Summary {
                criteria: self
                    .criteria
                    .iter()
                    .map(|c| CriterionLine {
                        name: c.name.clone(),
                        verdict: c.verdict.name().to_string(),
                        detail: c.detail.clone(),
                    })
                    .collect(),
                explanation: self.explanation.clone(),
            },
        }
    }
}

/// Grades the rounds `runs` (baseline, candidate, reference) of lab `l`.
pub fn assemble(
    l: &Lab,
    candidate: &Knobs,
    reference: &Knobs,
    runs: &[Vec<RunSample>; 3],
    trace: crate::experiments::trace::Trace,
) -> LabResult {
    let on_gpu = trace.other_data.backend == "gpu";
    let (b, c, r) = (
        measured(&l.baseline, &runs[0]),
        measured(candidate, &runs[1]),
        measured(reference, &runs[2]),
    );
    let graded = criteria::grade(l, candidate, &b, &c, &r);
    let (criteria, mut explanation, ref_gain) =
        (graded.criteria, graded.explanation, graded.reference_gain);
    let inert: Vec<Inert> = if on_gpu {
        Vec::new()
    } else {
        changed(&l.baseline, candidate)
            .into_iter()
            .filter_map(|k| {
                k.cpu_inert().map(|why| Inert {
                    knob: k.name(),
                    why,
                })
            })
            .collect()
    };
    let p = b.profile;
    explanation.insert(
        0,
        format!(
            "The baseline's step took {:.3} ms: {:.3} ms staging and copying batches, {:.3} ms waiting on the device, {:.3} ms of forward and backward, {:.3} ms in the optimiser.",
            p.step_ms, p.copy_ms, p.sync_wait_ms, p.compute_ms, p.optimizer_ms
        ),
    );
    let graded: Vec<Verdict> = criteria
        .iter()
        .map(|c| c.verdict)
        .filter(|v| *v != Verdict::NotGraded)
        .collect();
    let passed = graded.iter().filter(|v| **v == Verdict::Pass).count();
    LabResult {
        score_percent: crate::format::percent(passed, graded.len()),
        lab: l.id,
        title: l.title,
        backend: if on_gpu {
            DeviceKind::Cuda
        } else {
            DeviceKind::Cpu
        },
        verdict: Verdict::all(criteria.iter().map(|c| c.verdict)),
        criteria,
        inert,
        knobs: knob_links(l, on_gpu),
        explanation,
        nominal_speedup: l.speedup,
        reference_gain: ref_gain,
        baseline: b,
        candidate: c,
        reference: r,
        steps: l.steps,
        trace,
    }
}

fn knob_links(l: &Lab, on_gpu: bool) -> Vec<KnobLink> {
    l.knobs
        .iter()
        .map(|(k, lesson)| KnobLink {
            knob: k.name(),
            lesson,
            inert_here: if on_gpu { None } else { k.cpu_inert() },
        })
        .collect()
}

/// The panel's no-JavaScript text: the lab, its knobs and its targets.
pub fn describe(l: &Lab) -> String {
    let knobs: Vec<String> = l
        .knobs
        .iter()
        .map(|(k, _)| match k.cpu_inert() {
            Some(_) => format!("{} (no effect on a CPU-only server)", k.label()),
            None => k.label().to_string(),
        })
        .collect();
    let mut goals = Vec::new();
    if let Some(s) = l.speedup {
        goals.push(format!("at least {s}× the baseline's samples per second (or, where the lab's reference setting gains less on this server, three quarters of the way from the baseline's speed to the reference's)"));
    }
    if let Some(m) = l.memory_share {
        goals.push(format!(
            "peak reserved memory under {:.0}% of the baseline's, the loss still falling",
            m * 100.0
        ));
    }
    if let Some(f) = l.speed_floor {
        goals.push(format!(
            "at least {:.0}% of its samples per second",
            f * 100.0
        ));
    }
    if let Some(w) = l.loss_within {
        goals.push(format!("the final loss within {:.0}% of FP32's", w * 100.0));
    }
    if let Some(w) = l.timer_within {
        goals.push(format!(
            "a step timer within {:.0}% of the true step time",
            w * 100.0
        ));
    }
    format!(
        "Lab “{}”: a training loop (batch {}, hidden width {}) starts slow. Turn its knobs ({}) to reach {}. The server runs the baseline, your settings and a reference in turn, {} rounds each, and grades on the medians and their spread; a noisy run is called inconclusive, not failed.",
        l.title,
        thousands(l.baseline.batch as f64),
        thousands(l.baseline.hidden as f64),
        knobs.join(", "),
        goals.join("; "),
        super::ROUNDS
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::labs::sample::{RunClock, TimeProfile};
    use crate::experiments::labs::{LabId, lab};
    use crate::experiments::trace::TraceBuilder;

    fn cpu_trace() -> crate::experiments::trace::Trace {
        TraceBuilder::new("tuning lab", false, "test").finish()
    }

    /// Seven rounds of a recorded-looking run at `sps` samples/s (±2%).
    fn runs(sps: f64, timer_ratio: f64) -> Vec<RunSample> {
        (0..7)
            .map(|i| RunSample {
                samples_per_sec: sps * (0.98 + 0.04 * f64::from(i) / 6.0),
                timer_ratio,
                first_loss: 1.1,
                final_loss: 0.3,
                profile: TimeProfile::default(),
                clock: RunClock::start(0),
            })
            .collect()
    }

    #[test]
    fn the_baseline_itself_never_passes() {
        // Stop waiting on a CPU: the reference is no faster (speed not graded) and
        // every loss read syncs, so the baseline's timer is true; it must still fail.
        let l = lab(LabId::StopWaiting);
        let same: [Vec<RunSample>; 3] = std::array::from_fn(|_| runs(70_000.0, 1.0));
        let r = assemble(&l, &l.baseline, &l.cpu_reference(), &same, cpu_trace());
        assert_eq!(r.verdict, Verdict::Fail, "{:?}", r.criteria);
        assert!(r.score_percent < 100.0);
        let fixed = assemble(&l, &l.reference, &l.cpu_reference(), &same, cpu_trace());
        assert_eq!(fixed.verdict, Verdict::Pass, "{:?}", fixed.criteria);
        assert_eq!(fixed.score_percent, 100.0);
    }
}

//! A lab's graded result: the three settings' measurements, each criterion with its
//! verdict and the numbers behind it, the knobs that do nothing on this backend, and a
//! short explanation in the lesson's terms, and the job's trace. Also the no-JavaScript
//! text of the panel.

use serde::Serialize;

use super::catalog::{Knob, Knobs, Lab};
use super::grade::{self, Ratio, Verdict};
use super::memory::{self, MemoryProfile};
use super::sample::{RunSample, TimeProfile};
use crate::format::thousands;
use crate::measure::{Summary, summarize};

/// One setting's measurements over the rounds.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Measured {
    /// The setting.
    pub knobs: Knobs,
    /// Samples per second, one per round.
    pub samples: Vec<f64>,
    /// Their median and spread.
    pub samples_per_sec: Summary,
    /// The loss at the last step (the same in every round: the run is deterministic).
    pub final_loss: f32,
    /// The loss at the first step.
    pub first_loss: f32,
    /// The loop's timer over the true time per step, one per round.
    pub timer_ratio: Vec<f64>,
    /// Where the time of a step went, in milliseconds (medians over the rounds).
    pub profile: TimeProfile,
    /// The allocator model's figures for this setting.
    pub memory: MemoryProfile,
}

/// One graded criterion.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Criterion {
    /// What is graded.
    pub name: String,
    /// How it came out.
    pub verdict: Verdict,
    /// The numbers behind it.
    pub detail: String,
    /// The candidate's ratio to the baseline, when the criterion is one.
    pub ratio: Option<Ratio>,
    /// The target on this backend, when there is one.
    pub target: Option<f64>,
}

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
    pub backend: &'static str,
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

fn median(v: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = v.collect();
    summarize(&v).map_or(f64::NAN, |s| s.median)
}

fn measured(knobs: &Knobs, runs: &[RunSample]) -> Measured {
    let samples: Vec<f64> = runs.iter().map(|r| r.samples_per_sec).collect();
    let last = runs.last();
    Measured {
        knobs: *knobs,
        samples_per_sec: summarize(&samples).unwrap_or(Summary::NONE),
        samples,
        final_loss: last.map_or(f32::NAN, |r| r.final_loss),
        first_loss: last.map_or(f32::NAN, |r| r.first_loss),
        timer_ratio: runs.iter().map(|r| r.timer_ratio).collect(),
        profile: TimeProfile {
            step_ms: median(runs.iter().map(|r| r.profile.step_ms)),
            copy_ms: median(runs.iter().map(|r| r.profile.copy_ms)),
            sync_wait_ms: median(runs.iter().map(|r| r.profile.sync_wait_ms)),
            compute_ms: median(runs.iter().map(|r| r.profile.compute_ms)),
            optimizer_ms: median(runs.iter().map(|r| r.profile.optimizer_ms)),
        },
        memory: memory::profile(knobs),
    }
}

/// Grades the rounds `runs` (baseline, candidate, reference) of lab `l`, whose job
/// `trace` also says which backend ran them.
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
    let gain = grade::gain(&b.samples, &c.samples);
    let mut criteria = Vec::new();
    let mut explanation = Vec::new();
    let ratio_text = |g: Option<Ratio>| {
        g.map_or("too few runs to compare".into(), |g| {
            format!(
                "{:.2}× median (between {:.2}× and {:.2}× on the quartiles)",
                g.median, g.low, g.high
            )
        })
    };
    let ref_gain = grade::gain(&b.samples, &r.samples);
    if let Some(nominal) = l.speedup {
        let target = grade::target(nominal, ref_gain);
        let detail = match target {
            grade::Target::At(t) => format!(
                "samples/s {} against a target of {t:.2}× (nominal {nominal}×; the reference reached {})",
                ratio_text(gain),
                ratio_text(ref_gain)
            ),
            grade::Target::NotReal => format!(
                "the reference reached only {} here: these knobs do not speed up this backend, so speed is not graded on it",
                ratio_text(ref_gain)
            ),
            grade::Target::Unsure => format!(
                "the reference's own gain ({}) was lost in the noise of this run: run again",
                ratio_text(ref_gain)
            ),
        };
        criteria.push(Criterion {
            name: format!("at least {nominal}× the baseline's samples/s"),
            verdict: grade::grade_gain(gain, target),
            detail,
            ratio: gain,
            target: target.factor(),
        });
    }
    if let Some(floor) = l.speed_floor {
        criteria.push(Criterion {
            name: format!(
                "keeps at least {:.0}% of the baseline's samples/s",
                floor * 100.0
            ),
            verdict: grade::grade_gain(gain, grade::Target::At(floor)),
            detail: format!("samples/s {}", ratio_text(gain)),
            ratio: gain,
            target: Some(floor),
        });
    }
    if let Some(share) = l.memory_share {
        let budget = (b.memory.peak_reserved as f64 * share) as u64;
        let fits = c.memory.peak_reserved <= budget;
        criteria.push(Criterion {
            name: format!(
                "peak reserved memory under {:.0}% of the baseline's",
                share * 100.0
            ),
            verdict: if fits { Verdict::Pass } else { Verdict::Fail },
            detail: format!(
                "{} reserved at the peak against a budget of {} (baseline {})",
                mib(c.memory.peak_reserved),
                mib(budget),
                mib(b.memory.peak_reserved)
            ),
            ratio: None,
            target: None,
        });
        let falling = c.final_loss < c.first_loss;
        criteria.push(Criterion {
            name: "the loss still falls".into(),
            verdict: if falling {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            detail: format!("{:.4} → {:.4}", c.first_loss, c.final_loss),
            ratio: None,
            target: None,
        });
    }
    if let Some(within) = l.loss_within {
        let gap = f64::from((c.final_loss - b.final_loss).abs() / b.final_loss.abs().max(1e-6));
        criteria.push(Criterion {
            name: format!("final loss within {:.0}% of the baseline's", within * 100.0),
            verdict: if gap <= within {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            detail: format!(
                "{:.4} against {:.4} ({:.2}% apart)",
                c.final_loss,
                b.final_loss,
                gap * 100.0
            ),
            ratio: None,
            target: None,
        });
    }
    if let Some(within) = l.timer_within {
        let verdict = grade::grade_within(&c.timer_ratio, 1.0 - within, 1.0 + within);
        criteria.push(Criterion {
            name: format!(
                "your timer within {:.0}% of the true step time",
                within * 100.0
            ),
            verdict,
            detail: format!(
                "timer ÷ true step time, median {:.2}",
                median(c.timer_ratio.iter().copied())
            ),
            ratio: None,
            target: None,
        });
        if verdict == Verdict::Fail {
            explanation.push("Without a sync before the clock is read, the timer measures how fast the steps were queued, not how long they ran (lesson 5).".into());
        }
    }
    if changed(&l.baseline, candidate).is_empty() {
        // The slow loop itself: on a backend where a lab's speed is not graded, its
        // other criteria can hold for the baseline too, and running it is no solution.
        criteria.insert(
            0,
            Criterion {
                name: "at least one knob turned away from the slow loop".into(),
                verdict: Verdict::Fail,
                detail: "these are the baseline's own settings: change a knob, then run again"
                    .into(),
                ratio: None,
                target: None,
            },
        );
    }
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
        score_percent: if graded.is_empty() {
            0.0
        } else {
            (1000.0 * passed as f64 / graded.len() as f64).round() / 10.0
        },
        lab: l.id,
        title: l.title,
        backend: if on_gpu { "cuda" } else { "cpu" },
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

/// The knobs whose value differs between `a` and `b`.
fn changed(a: &Knobs, b: &Knobs) -> Vec<Knob> {
    let mut out = Vec::new();
    let mut push = |k, differs| {
        if differs {
            out.push(k);
        }
    };
    push(Knob::Batch, a.batch != b.batch);
    push(Knob::DataOnDevice, a.data_on_device != b.data_on_device);
    push(Knob::Pinned, a.pinned != b.pinned);
    push(Knob::NonBlocking, a.non_blocking != b.non_blocking);
    push(Knob::LogEvery, a.log_every != b.log_every);
    push(Knob::TimerSync, a.timer_sync != b.timer_sync);
    push(Knob::Precision, a.precision != b.precision);
    push(Knob::Optimizer, a.optimizer != b.optimizer);
    push(Knob::Accumulation, a.accumulation != b.accumulation);
    push(Knob::Recompute, a.recompute != b.recompute);
    out
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// The panel's no-JavaScript text: the lab, its knobs and its targets.
pub fn describe(l: &Lab) -> String {
    let knobs: Vec<String> = l
        .knobs
        .iter()
        .map(|(k, _)| match k.cpu_inert() {
            Some(_) => format!("{} (no effect on a CPU-only server)", k.name()),
            None => k.name().to_string(),
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
    use crate::experiments::labs::sample::RunClock;
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

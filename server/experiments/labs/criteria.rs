//! A lab's criteria: each goal of the lab's definition graded on the three settings'
//! measurements ([`super::grade`] holds the rules), with the numbers behind each verdict
//! in words, and the explanation lines a verdict calls for.

use serde::Serialize;

use super::catalog::{Knob, Knobs, Lab};
use super::grade::{self, Ratio, Verdict};
use super::sample::Measured;

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

/// Every criterion of a lab, graded.
pub struct Graded {
    /// The criteria, in the order shown.
    pub criteria: Vec<Criterion>,
    /// What the verdicts call for, in the lesson's terms.
    pub explanation: Vec<String>,
    /// What the lab's reference gained over the baseline in this run.
    pub reference_gain: Option<Ratio>,
}

fn median(v: &[f64]) -> f64 {
    crate::measure::summarize(v).map_or(f64::NAN, |s| s.median)
}

/// Grades `l`'s goals on the baseline `b`, the candidate `c` (the setting `candidate`)
/// and the reference `r`.
pub fn grade(l: &Lab, candidate: &Knobs, b: &Measured, c: &Measured, r: &Measured) -> Graded {
    let gain = grade::gain(&b.samples, &c.samples);
    let mut criteria = Vec::new();
    let mut explanation = Vec::new();
    let ratio_text = |g: Option<Ratio>| {
        g.map_or("too few runs to compare".into(), |g| {
            format!(
                "{:.2}× median round (the middle half of the rounds between {:.2}× and {:.2}×)",
                g.median, g.low, g.high
            )
        })
    };
    let ref_gain = grade::gain(&b.samples, &r.samples);
    if let Some(nominal) = l.speedup {
        let target = grade::target(nominal, ref_gain);
        let detail = match target {
            grade::Target::At(t) => format!(
                "Samples/s {} against a target of {t:.2}× (nominal {nominal}×; the reference reached {})",
                ratio_text(gain),
                ratio_text(ref_gain)
            ),
            grade::Target::NotReal => format!(
                "The reference reached only {} here: these knobs do not speed up this backend, so speed is not graded on it",
                ratio_text(ref_gain)
            ),
            grade::Target::Unsure => format!(
                "The reference's own gain ({}) was lost in the noise of this run: run again",
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
            detail: format!("Samples/s {}", ratio_text(gain)),
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
            detail: format!("Loss {:.4} → {:.4}", c.first_loss, c.final_loss),
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
                "Timer ÷ true step time, median {:.2}",
                median(&c.timer_ratio)
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
                detail: "These are the baseline's own settings: change a knob, then run again"
                    .into(),
                ratio: None,
                target: None,
            },
        );
    }
    Graded {
        criteria,
        explanation,
        reference_gain: ref_gain,
    }
}

/// The knobs whose value differs between `a` and `b`.
pub fn changed(a: &Knobs, b: &Knobs) -> Vec<Knob> {
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

//! The grading rule of the tuning labs, as pure functions over recorded measurements, so
//! the rule is tested exactly (no clocks here).
//!
//! A lab's baseline and the learner's candidate run in the same job, interleaved, so
//! each has a handful of samples measured under the same conditions. A speed criterion
//! passes only when the improvement holds beyond the noise: the candidate's *first*
//! quartile against the baseline's *third* quartile (the pessimistic ratio) must reach
//! the target. It fails when even the optimistic ratio (candidate's third quartile
//! against the baseline's first) stays below the target. Anything between is
//! "inconclusive": the box was too noisy to tell, run again. A lucky run cannot pass
//! (one fast sample moves neither quartile far), and a noisy box is never called a fail.
//!
//! Targets come from the lab's definition on the backend at hand ([`target`]): the
//! lab's known-good settings (its reference) run in the same job, and the target is the
//! nominal factor or, where this backend cannot reach it, three quarters of the way to
//! what the reference reached. A reference that barely beats the baseline means the
//! effect is not real on this backend, and the criterion is not graded here.

use serde::{Deserialize, Serialize};

use crate::spread::quantile;

/// Fewest samples per side for a graded speed comparison (quartiles need a few).
pub const MIN_SAMPLES: usize = 3;
/// Below this reference gain the effect is not real on this backend: not graded.
pub const REAL_EFFECT: f64 = 1.2;
/// Share of the reference's gain (above 1×) a backend-limited target asks for.
pub const REFERENCE_SHARE: f64 = 0.75;

/// How one criterion came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Held beyond the noise.
    Pass,
    /// Missed, even on the most favourable reading.
    Fail,
    /// The noise was too large to tell: run again.
    Inconclusive,
    /// Not graded on this backend (the effect is not real here).
    NotGraded,
}

impl Verdict {
    /// The word a learner reads.
    pub fn word(self) -> &'static str {
        match self {
            Self::Pass => "passed",
            Self::Fail => "not yet",
            Self::Inconclusive => "inconclusive, run again",
            Self::NotGraded => "not graded on this backend",
        }
    }

    /// All graded criteria combined: any fail fails, else any inconclusive is
    /// inconclusive, else a pass if at least one was graded.
    pub fn all(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let (mut fail, mut unsure, mut graded) = (false, false, false);
        for v in verdicts {
            fail |= v == Self::Fail;
            unsure |= v == Self::Inconclusive;
            graded |= v != Self::NotGraded;
        }
        match (fail, unsure, graded) {
            (true, _, _) => Self::Fail,
            (false, true, _) => Self::Inconclusive,
            (false, false, true) => Self::Pass,
            (false, false, false) => Self::NotGraded,
        }
    }
}

/// A ratio of the candidate over the baseline, with its spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Ratio {
    /// Median over median.
    pub median: f64,
    /// The pessimistic reading (candidate Q1 ÷ baseline Q3).
    pub low: f64,
    /// The optimistic reading (candidate Q3 ÷ baseline Q1).
    pub high: f64,
}

/// Quartiles of `samples`: (Q1, median, Q3); `None` below [`MIN_SAMPLES`] or for a
/// sample that is not a positive finite number.
pub fn quartiles(samples: &[f64]) -> Option<(f64, f64, f64)> {
    if samples.len() < MIN_SAMPLES || samples.iter().any(|s| !s.is_finite() || *s <= 0.0) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some((
        quantile(&sorted, 0.25)?,
        quantile(&sorted, 0.5)?,
        quantile(&sorted, 0.75)?,
    ))
}

/// The candidate's gain over the baseline for a higher-is-better measurement.
pub fn gain(baseline: &[f64], candidate: &[f64]) -> Option<Ratio> {
    let (b1, bm, b3) = quartiles(baseline)?;
    let (c1, cm, c3) = quartiles(candidate)?;
    Some(Ratio {
        median: cm / bm,
        low: c1 / b3,
        high: c3 / b1,
    })
}

/// What a speed criterion aims at on this backend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// This factor over the baseline.
    At(f64),
    /// The reference clearly does not beat the baseline here: the effect is not real on
    /// this backend, so the criterion is not graded.
    NotReal,
    /// The reference's own gain was lost in the noise: run again.
    Unsure,
}

impl Target {
    /// The factor, when there is one.
    pub fn factor(self) -> Option<f64> {
        match self {
            Self::At(t) => Some(t),
            _ => None,
        }
    }
}

/// The speed target on this backend: `nominal`, or, when the lab's reference reached
/// less, [`REFERENCE_SHARE`] of the way from 1× to the reference's median gain. Not
/// graded when even the reference's optimistic gain is under [`REAL_EFFECT`]; unsure
/// when its median is under it but its optimistic reading is not.
pub fn target(nominal: f64, reference: Option<Ratio>) -> Target {
    match reference {
        None => Target::Unsure,
        Some(r) if r.high < REAL_EFFECT => Target::NotReal,
        Some(r) if r.median < REAL_EFFECT => Target::Unsure,
        Some(r) => Target::At(nominal.min(1.0 + REFERENCE_SHARE * (r.median - 1.0))),
    }
}

/// Grades a higher-is-better gain against `target`.
pub fn grade_gain(ratio: Option<Ratio>, target: Target) -> Verdict {
    match (ratio, target) {
        (_, Target::NotReal) => Verdict::NotGraded,
        (_, Target::Unsure) | (None, _) => Verdict::Inconclusive,
        (Some(r), Target::At(t)) if r.low >= t => Verdict::Pass,
        (Some(r), Target::At(t)) if r.high < t => Verdict::Fail,
        _ => Verdict::Inconclusive,
    }
}

/// Grades whether every value's band (Q1..Q3) of `values` lies within `lo..=hi`: pass
/// when the whole interquartile band is inside, fail when it is wholly outside,
/// inconclusive when it straddles a bound (a timer's reported-to-true ratio, say).
pub fn grade_within(values: &[f64], lo: f64, hi: f64) -> Verdict {
    match quartiles(values) {
        None => Verdict::Inconclusive,
        Some((q1, _, q3)) if q1 >= lo && q3 <= hi => Verdict::Pass,
        Some((q1, _, q3)) if q3 < lo || q1 > hi => Verdict::Fail,
        Some(_) => Verdict::Inconclusive,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Samples/s of five interleaved rounds each, in the range the CPU backend measures
    // for the feed-the-GPU lab (baseline batch 16; candidate batch 256, data resident).
    const BASELINE: [f64; 5] = [41_200.0, 40_100.0, 43_900.0, 39_800.0, 42_500.0];
    const FAST: [f64; 5] = [161_000.0, 158_300.0, 166_900.0, 149_800.0, 163_200.0];
    const SAME: [f64; 5] = [42_000.0, 40_900.0, 41_700.0, 43_300.0, 39_900.0];

    #[test]
    fn a_clear_gain_passes_and_no_gain_fails() {
        let fast = gain(&BASELINE, &FAST).unwrap();
        assert!(fast.low <= fast.median && fast.median <= fast.high);
        assert_eq!(grade_gain(Some(fast), Target::At(3.0)), Verdict::Pass);
        let same = gain(&BASELINE, &SAME).unwrap();
        assert_eq!(grade_gain(Some(same), Target::At(3.0)), Verdict::Fail);
        // A target just beyond the pessimistic reading is not a pass.
        assert_eq!(
            grade_gain(Some(fast), Target::At(fast.low * 1.01)),
            Verdict::Inconclusive
        );
    }

    #[test]
    fn one_lucky_run_does_not_pass() {
        // Four candidate runs at baseline speed and one 10× faster.
        let lucky = [41_000.0, 40_000.0, 420_000.0, 42_000.0, 41_500.0];
        let r = gain(&BASELINE, &lucky).unwrap();
        assert_ne!(grade_gain(Some(r), Target::At(1.5)), Verdict::Pass, "{r:?}");
    }

    #[test]
    fn a_noisy_box_is_inconclusive_not_failed() {
        // The candidate's median is 3.1× but both sides swing by ±60%.
        let base = [20_000.0, 40_000.0, 60_000.0, 35_000.0, 45_000.0];
        let cand = [70_000.0, 125_000.0, 190_000.0, 100_000.0, 160_000.0];
        let r = gain(&base, &cand).unwrap();
        assert!(r.median > 3.0);
        assert_eq!(grade_gain(Some(r), Target::At(3.0)), Verdict::Inconclusive);
        // Too few samples cannot be graded either way.
        assert_eq!(
            grade_gain(gain(&base[..2], &cand), Target::At(3.0)),
            Verdict::Inconclusive
        );
    }

    #[test]
    fn targets_follow_the_reference_on_this_backend() {
        let r = |median| Ratio {
            median,
            low: median * 0.9,
            high: median * 1.1,
        };
        assert_eq!(target(3.0, Some(r(8.0))), Target::At(3.0));
        assert_eq!(target(3.0, Some(r(2.0))), Target::At(1.75));
        // BF16 emulated on a CPU: the reference is slower than the baseline.
        assert_eq!(target(1.5, Some(r(0.8))), Target::NotReal);
        // A reference at 1.15× ± 10% may or may not be real: run again.
        assert_eq!(target(3.0, Some(r(1.15))), Target::Unsure);
        assert_eq!(target(3.0, None), Target::Unsure);
        assert_eq!(
            grade_gain(Some(r(5.0)), Target::NotReal),
            Verdict::NotGraded
        );
        assert_eq!(
            grade_gain(Some(r(5.0)), Target::Unsure),
            Verdict::Inconclusive
        );
    }

    #[test]
    fn a_band_inside_passes_outside_fails_across_is_inconclusive() {
        assert_eq!(
            grade_within(&[0.98, 1.01, 1.03, 0.99], 0.9, 1.1),
            Verdict::Pass
        );
        // A timer without a sync reports the launch time only.
        assert_eq!(
            grade_within(&[0.08, 0.11, 0.09, 0.1], 0.9, 1.1),
            Verdict::Fail
        );
        assert_eq!(
            grade_within(&[0.8, 1.0, 1.05, 0.85, 1.2], 0.9, 1.1),
            Verdict::Inconclusive
        );
    }

    #[test]
    fn verdicts_combine_worst_first() {
        use Verdict::*;
        assert_eq!(Verdict::all([Pass, NotGraded, Pass]), Pass);
        assert_eq!(Verdict::all([Pass, Inconclusive]), Inconclusive);
        assert_eq!(Verdict::all([Inconclusive, Fail]), Fail);
        assert_eq!(Verdict::all([NotGraded]), NotGraded);
    }
}

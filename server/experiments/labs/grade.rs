//! The grading rule of the tuning labs, as pure functions over recorded measurements, so
//! the rule is tested exactly (no clocks here).
//!
//! A lab's baseline and the learner's candidate run in the same job, interleaved, so
//! each round holds one sample of each, measured back to back under the same
//! conditions. A speed criterion compares them pair by pair: each round's ratio
//! (candidate over baseline) is a reading of the gain, and a load that comes and goes
//! on a busy box moves both sides of a pair together. It passes only when the gain
//! holds beyond the noise: the *first* quartile of the round ratios (the pessimistic
//! reading) must reach the target. It fails when even their *third* quartile (the
//! optimistic reading) stays below the target. Anything between is "inconclusive": the
//! box was too noisy to tell, run again. A lucky run cannot pass (one fast round moves
//! the first quartile little), and a noisy box is never called a fail.
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
/// Widest spread (third over first quartile of its round ratios) of a reference gain
/// that may size a target: beyond it the reference's gain itself is too uncertain.
pub const MAX_REFERENCE_SPREAD: f64 = 1.5;

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
    /// Its name as sent and stored: `pass`, `fail`, `inconclusive`, `not-graded`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Inconclusive => "inconclusive",
            Self::NotGraded => "not-graded",
        }
    }

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
    /// The median of the round ratios.
    pub median: f64,
    /// The pessimistic reading: the round ratios' first quartile.
    pub low: f64,
    /// The optimistic reading: the round ratios' third quartile.
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

/// The candidate's gain over the baseline for a higher-is-better measurement, from
/// samples taken in rounds (`baseline[i]` and `candidate[i]` back to back): the
/// quartiles of the round ratios. `None` when the rounds do not pair up or are too few.
pub fn gain(baseline: &[f64], candidate: &[f64]) -> Option<Ratio> {
    if baseline.len() != candidate.len() || baseline.iter().any(|b| !b.is_finite() || *b <= 0.0) {
        return None;
    }
    let ratios: Vec<f64> = baseline.iter().zip(candidate).map(|(b, c)| c / b).collect();
    let (low, median, high) = quartiles(&ratios)?;
    Some(Ratio { median, low, high })
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
/// when its median is under it but its optimistic reading is not, and when a target
/// would be sized from a reference gain whose middle half spans more than
/// [`MAX_REFERENCE_SPREAD`] (on a busy box the reference's gain is squeezed and swings,
/// and a target sized from it would be too easy or too hard).
pub fn target(nominal: f64, reference: Option<Ratio>) -> Target {
    match reference {
        None => Target::Unsure,
        Some(r) if r.high < REAL_EFFECT => Target::NotReal,
        Some(r) if r.median < REAL_EFFECT => Target::Unsure,
        Some(r) if r.median >= nominal => Target::At(nominal),
        Some(r) if r.high > MAX_REFERENCE_SPREAD * r.low => Target::Unsure,
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

    // Samples/s of five interleaved rounds each (pairs by index), in the range the CPU backend measures
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
        // The candidate's median round is 3.1× but the rounds swing from 2× to 4.5×.
        let base = [20_000.0, 40_000.0, 60_000.0, 35_000.0, 45_000.0];
        let cand = [40_000.0, 124_000.0, 270_000.0, 70_000.0, 190_000.0];
        let r = gain(&base, &cand).unwrap();
        assert!(r.median > 3.0, "{r:?}");
        assert_eq!(grade_gain(Some(r), Target::At(3.0)), Verdict::Inconclusive);
        // Too few rounds, or rounds that do not pair up, cannot be graded either way.
        assert_eq!(
            grade_gain(gain(&base[..2], &cand[..2]), Target::At(3.0)),
            Verdict::Inconclusive
        );
        assert_eq!(gain(&base[..4], &cand), None);
    }

    #[test]
    fn a_load_that_moves_both_sides_of_each_round_cancels() {
        // The box's load halves and doubles both settings' speed round by round: the
        // pooled spreads overlap, the round ratios do not.
        let base = [20_000.0, 40_000.0, 60_000.0, 35_000.0, 45_000.0];
        let cand = base.map(|b| b * 3.4);
        let r = gain(&base, &cand).unwrap();
        assert!(
            (r.low - 3.4).abs() < 1e-9 && (r.high - 3.4).abs() < 1e-9,
            "{r:?}"
        );
        assert_eq!(grade_gain(Some(r), Target::At(3.0)), Verdict::Pass);
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
        // A reference whose rounds swing from 1.5× to 3× cannot size a lower target…
        let swinging = Ratio {
            median: 2.0,
            low: 1.5,
            high: 3.0,
        };
        assert_eq!(target(3.0, Some(swinging)), Target::Unsure);
        // … but one that reaches the nominal factor leaves the nominal target.
        assert_eq!(target(1.8, Some(swinging)), Target::At(1.8));
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
    fn a_verdicts_stored_name_is_the_one_it_is_sent_as() {
        use Verdict::*;
        for verdict in [Pass, Fail, Inconclusive, NotGraded] {
            assert_eq!(serde_json::to_value(verdict).unwrap(), verdict.name());
        }
        for id in crate::experiments::labs::ALL {
            assert_eq!(serde_json::to_value(id).unwrap(), id.name());
        }
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

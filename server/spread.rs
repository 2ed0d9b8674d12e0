//! The spread statistics behind every `measure::Summary`: quartiles (so panels
//! can draw the interquartile range beside the median), Tukey's outlier fences (so a
//! sweep's summary can say a point had stray samples) and the stopping rule of the
//! adaptive timing loop (a point is "settled" once its IQR is a small share of its
//! median). Pure functions over sorted samples; no clocks, so the tests are exact.

/// A point is settled when its interquartile range is at most this share of its median.
pub const SETTLED_IQR: f64 = 0.10;
/// Tukey's fence: a sample further than this many IQRs outside the quartiles is an outlier.
pub const TUKEY_K: f64 = 1.5;

/// The `p`-quantile (0 ≤ p ≤ 1) of `sorted` by linear interpolation between ranks (the
/// "type 7" rule of R and NumPy's default); `None` for no samples.
pub fn quantile(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 || !p.is_finite() {
        return None;
    }
    let rank = p.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64))
}

/// How many of `sorted` lie outside Tukey's fences [q1 − k·IQR, q3 + k·IQR].
pub fn outliers(sorted: &[f64], q1: f64, q3: f64) -> usize {
    let iqr = q3 - q1;
    let (low, high) = (q1 - TUKEY_K * iqr, q3 + TUKEY_K * iqr);
    sorted.iter().filter(|&&s| s < low || s > high).count()
}

/// Whether samples with quartiles `q1`, `q3` and median `median` have settled.
pub fn settled(q1: f64, q3: f64, median: f64) -> bool {
    median > 0.0 && (q3 - q1) <= SETTLED_IQR * median
}

/// Whether the unsorted `samples` have settled (at least three of them, IQR small).
pub fn samples_settled(samples: &[f64]) -> bool {
    if samples.len() < 3 || samples.iter().any(|s| !s.is_finite()) {
        return false;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    match (
        quantile(&sorted, 0.25),
        quantile(&sorted, 0.5),
        quantile(&sorted, 0.75),
    ) {
        (Some(q1), Some(m), Some(q3)) => settled(q1, q3, m),
        _ => false,
    }
}

/// Below this relative gap two medians are never called different (the panels' rule too,
/// in `web/static/js/logic/measured-verdicts.js`).
pub const MIN_RELATIVE_GAP: f64 = 0.05;

/// Whether medians `a` and `b`, with interquartile ranges `iqr_a` and `iqr_b`, differ by
/// more than their noise: the gap must exceed the mean IQR and 5% of the smaller median.
pub fn measurably_different(a: f64, iqr_a: f64, b: f64, iqr_b: f64) -> bool {
    let gap = (a - b).abs();
    let noise = (iqr_a.max(0.0) + iqr_b.max(0.0)) / 2.0;
    a.is_finite() && b.is_finite() && gap > noise && gap > MIN_RELATIVE_GAP * a.min(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_interpolate_between_ranks() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&s, 0.25), Some(2.0));
        assert_eq!(quantile(&s, 0.5), Some(3.0));
        assert_eq!(quantile(&s, 0.75), Some(4.0));
        assert_eq!(quantile(&[1.0, 2.0], 0.25), Some(1.25));
        assert_eq!(quantile(&[], 0.5), None);
        assert_eq!(quantile(&[7.0], 0.9), Some(7.0));
    }

    #[test]
    fn tukey_fences_count_stray_samples_only() {
        let s = [10.0, 10.0, 10.5, 11.0, 11.0, 40.0];
        let (q1, q3) = (quantile(&s, 0.25).unwrap(), quantile(&s, 0.75).unwrap());
        assert_eq!(outliers(&s, q1, q3), 1, "the 40 ms sample is an outlier");
        let even = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(outliers(&even, 1.75, 3.25), 0);
    }

    #[test]
    fn a_gap_counts_only_beyond_the_noise_and_five_percent() {
        assert!(measurably_different(3.0, 0.2, 1.0, 0.2));
        assert!(!measurably_different(1.5, 1.0, 1.0, 1.0), "inside the IQRs");
        assert!(!measurably_different(1.04, 0.0, 1.0, 0.0), "under 5%");
        assert!(!measurably_different(f64::NAN, 0.0, 1.0, 0.0));
    }

    #[test]
    fn a_point_settles_when_its_iqr_is_small_next_to_its_median() {
        assert!(samples_settled(&[10.0, 10.2, 10.1, 9.9, 10.0]));
        assert!(!samples_settled(&[10.0, 14.0, 6.0, 12.0, 8.0]));
        assert!(!samples_settled(&[10.0, 10.0]), "two samples are too few");
        assert!(!samples_settled(&[1.0, f64::NAN, 1.0]));
        assert!(!settled(0.0, 0.0, 0.0), "a zero median never settles");
    }
}

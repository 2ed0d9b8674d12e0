//! Number formatting shared by the command-line tables and the lessons' no-JavaScript
//! fallbacks, so a figure reads the same in a terminal and on a page; and the one
//! rounding rule for a score in percent ([`percent`]), which quizzes, labs and the
//! gradebook all use.

/// `n` rounded to a whole number with thousands separators: `1,073,741,824`.
pub fn thousands(n: f64) -> String {
    let digits = format!("{:.0}", n.round().abs());
    let mut out = String::new();
    if n.round() < 0.0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in GiB with two decimals, or `—` when unknown.
pub fn gib(bytes: Option<u64>) -> String {
    bytes.map_or("—".into(), |b| {
        format!("{:.2} GiB", b as f64 / f64::from(1u32 << 30))
    })
}

/// `correct` out of `total` in percent, rounded half up to one decimal (22 of 24 is
/// 91.7): the one rule for every score a page, an export or the gradebook shows. Whole
/// tenths are computed in integers, so 3 of 4 is exactly 75.0.
pub fn percent(correct: usize, total: usize) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let tenths = (correct * 2000 + total) / (2 * total);
    tenths as f64 / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_half_up_to_one_decimal() {
        assert_eq!(percent(22, 24), 91.7);
        assert_eq!(percent(2, 3), 66.7);
        assert_eq!(percent(1, 3), 33.3);
        assert_eq!(percent(3, 4), 75.0);
        assert_eq!(percent(1, 8), 12.5);
        assert_eq!(percent(1, 16), 6.3);
        assert_eq!(percent(0, 5), 0.0);
        assert_eq!(percent(5, 5), 100.0);
        assert_eq!(percent(0, 0), 0.0);
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(1_073_741_824.0), "1,073,741,824");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.4), "1,000");
        assert_eq!(thousands(-4096.0), "-4,096");
        assert_eq!(gib(Some(3 << 29)), "1.50 GiB");
        assert_eq!(gib(None), "—");
    }
}

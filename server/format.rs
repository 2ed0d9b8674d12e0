//! Number formatting shared by the command-line tables and the lessons' no-JavaScript
//! fallbacks, so a figure reads the same in a terminal and on a page.

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

#[cfg(test)]
mod tests {
    use super::*;

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

//! Reading a learner's numeric answer the way the lessons print numbers: thousands
//! separators (`1,048,576`, `1 048 576`, `1.048.576`), a decimal point or a decimal
//! comma (`14.9`, `14,9`), scientific notation (`1.5e9`), surrounding spaces, and a
//! trailing unit when it is the question's own (`14.9 GiB`, `20×`, `76 waves`).
//!
//! One rule settles the one ambiguous shape: a comma followed by exactly three digits,
//! in groups from a leading 1–3 digit group that is not `0` (`1,048`), is a thousands
//! separator, as the course writes them; any other single comma is a decimal comma
//! (`2,5`, `0,125`). A unit that is not the question's is refused rather than guessed
//! at, because `14.9 GB` is not `14.9 GiB`.

use std::fmt;

/// Why an answer could not be read as a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NumericError {
    /// Nothing but spaces.
    Empty,
    /// No number could be read from the text.
    NotANumber(String),
    /// The number is followed by a unit other than the question's.
    WrongUnit {
        /// What followed the number.
        given: String,
        /// The question's unit.
        expected: String,
    },
}

impl fmt::Display for NumericError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "type a number"),
            Self::NotANumber(text) => write!(
                f,
                "“{text}” is not a number the course can read; type digits, for example 1,048,576 or 14.9"
            ),
            Self::WrongUnit { given, expected } => write!(
                f,
                "the answer is asked for in {expected}, but “{given}” follows the number; give the number in {expected}, with or without the unit"
            ),
        }
    }
}

/// `x` as the lessons print numbers: its shortest exact decimal form, with thousands
/// separators from 1,000 on (`1,048,576`, `14.9`, `0.05`).
pub fn display(x: f64) -> String {
    let plain = format!("{x}");
    if x.abs() < 1000.0 || plain.contains(['e', 'E']) {
        return plain;
    }
    let (sign, digits) = plain
        .strip_prefix('-')
        .map_or(("", plain.as_str()), |d| ("-", d));
    let (int, frac) = digits
        .split_once('.')
        .map_or((digits, None), |(i, f)| (i, Some(f)));
    let mut out = String::from(sign);
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(frac) = frac {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// Spaces a number may be grouped with: ordinary, no-break, thin and narrow no-break.
fn is_group_space(c: char) -> bool {
    matches!(c, ' ' | '\u{a0}' | '\u{2009}' | '\u{202f}')
}

/// The number in `input`, checking any trailing unit against `unit`.
pub fn parse_answer(input: &str, unit: &str) -> Result<f64, NumericError> {
    let text = input.trim_matches(|c: char| c.is_whitespace() || is_group_space(c));
    if text.is_empty() {
        return Err(NumericError::Empty);
    }
    let (number, rest) = split_number(text);
    // A sentence's full stop after the number or unit is not part of either.
    let rest = rest
        .trim_matches(|c: char| c.is_whitespace() || is_group_space(c))
        .trim_end_matches('.')
        .trim_end();
    if number.is_empty() {
        return Err(NumericError::NotANumber(text.to_string()));
    }
    if !rest.is_empty() && !unit_matches(rest, unit) {
        // "12abc" is a typo, not a unit: say it is not a number.
        return Err(if rest.chars().any(|c| c.is_ascii_digit()) {
            NumericError::NotANumber(text.to_string())
        } else {
            NumericError::WrongUnit {
                given: rest.to_string(),
                expected: unit.to_string(),
            }
        });
    }
    normalise(number)
        .and_then(|plain| plain.parse::<f64>().ok())
        .filter(|x| x.is_finite())
        .ok_or_else(|| NumericError::NotANumber(text.to_string()))
}

/// Splits `text` into its leading number (digits, signs, separators, an exponent) and
/// what follows it.
fn split_number(text: &str) -> (&str, &str) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut end = 0;
    let mut seen_digit = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        let next = chars.get(i + 1).map(|(_, c)| *c);
        let next_is_digit = next.is_some_and(|n| n.is_ascii_digit());
        let ok = match c {
            '0'..='9' => {
                seen_digit = true;
                true
            }
            '+' | '-' | '\u{2212}' if i == 0 => true,
            // A leading decimal point (".5") starts a number too.
            '.' => next_is_digit,
            ',' | '_' | '\'' => seen_digit && next_is_digit,
            c if is_group_space(c) => seen_digit && next_is_digit,
            'e' | 'E' if seen_digit => {
                let after = chars.get(i + 2).map(|(_, c)| *c);
                next_is_digit
                    || (matches!(next, Some('+' | '-' | '\u{2212}'))
                        && after.is_some_and(|a| a.is_ascii_digit()))
            }
            _ => false,
        };
        if !ok {
            break;
        }
        if matches!(c, 'e' | 'E') {
            // The exponent's sign belongs to the number too.
            if matches!(next, Some('+' | '-' | '\u{2212}')) {
                i += 1;
            }
        }
        i += 1;
        end = chars.get(i).map_or(text.len(), |(at, _)| *at);
    }
    if !seen_digit {
        return ("", text);
    }
    text.split_at(end)
}

/// The number in Rust's own syntax: group separators dropped, one `.` as the decimal
/// point; `None` when the grouping is not a real thousands grouping.
fn normalise(number: &str) -> Option<String> {
    let number = number.replace('\u{2212}', "-");
    let (mantissa, exponent) = match number.find(['e', 'E']) {
        Some(at) => number.split_at(at),
        None => (number.as_str(), ""),
    };
    let (sign, digits) = match mantissa.strip_prefix(['+', '-']) {
        Some(rest) => (&mantissa[..1], rest),
        None => ("", mantissa),
    };
    // Spaces, underscores and apostrophes only ever group digits.
    let spaced: Vec<&str> = digits
        .split(|c: char| is_group_space(c) || c == '_' || c == '\'')
        .collect();
    if spaced.len() > 1 && !is_grouped(&spaced, |s| s.chars().all(|c| c.is_ascii_digit())) {
        // "1 048 576" but not "10 48"; a decimal part may follow the last group.
        let (last, head) = spaced.split_last()?;
        let last_int = last.split(['.', ',']).next().unwrap_or("");
        let mut groups: Vec<&str> = head.to_vec();
        groups.push(last_int);
        if !is_grouped(&groups, |s| s.chars().all(|c| c.is_ascii_digit())) {
            return None;
        }
    }
    let digits: String = spaced.concat();
    let commas = digits.matches(',').count();
    let dots = digits.matches('.').count();
    let plain = match (commas, dots) {
        (0, 0) => digits,
        (0, 1) => digits,
        (1, 0) if !thousands(&digits, ',') => digits.replace(',', "."),
        (_, 0) if thousands(&digits, ',') => digits.replace(',', ""),
        (0, _) if thousands(&digits, '.') => digits.replace('.', ""),
        _ => {
            // Both: the last one is the decimal mark, the other groups thousands.
            let last_comma = digits.rfind(',')?;
            let last_dot = digits.rfind('.')?;
            let (group, decimal) = if last_dot > last_comma {
                (',', '.')
            } else {
                ('.', ',')
            };
            let (int, frac) = digits.rsplit_once(decimal)?;
            if frac.contains(group) || !thousands(int, group) {
                return None;
            }
            format!("{}.{frac}", int.replace(group, ""))
        }
    };
    Some(format!("{sign}{plain}{exponent}"))
}

/// Whether `groups` read as a thousands grouping: a first group of 1–3 characters (not
/// a lone `0`), then groups of exactly three.
fn is_grouped(groups: &[&str], valid: impl Fn(&str) -> bool) -> bool {
    let Some((first, rest)) = groups.split_first() else {
        return false;
    };
    (1..=3).contains(&first.len())
        && *first != "0"
        && valid(first)
        && rest.iter().all(|g| g.len() == 3 && valid(g))
}

/// Whether `digits` is an integer grouped in thousands by `separator` (at least once).
fn thousands(digits: &str, separator: char) -> bool {
    let groups: Vec<&str> = digits.split(separator).collect();
    groups.len() > 1 && is_grouped(&groups, |g| g.chars().all(|c| c.is_ascii_digit()))
}

/// Whether `given` (what followed the number) names the question's `unit`: the same
/// word in any case, singular or plural, or a multiplication sign for a factor.
fn unit_matches(given: &str, unit: &str) -> bool {
    let norm = |s: &str| s.trim().trim_end_matches('.').to_lowercase();
    let (given, unit) = (norm(given), norm(unit));
    let factor = |s: &str| matches!(s, "×" | "x" | "times");
    given == unit
        || given.strip_suffix('s') == Some(unit.as_str())
        || unit.strip_suffix('s') == Some(given.as_str())
        || (factor(&unit) && factor(&given))
        || (unit == "%" && given == "percent")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(input: &str, unit: &str) -> f64 {
        parse_answer(input, unit).unwrap_or_else(|e| panic!("{input:?} ({unit}): {e}"))
    }

    #[test]
    fn reads_numbers_as_the_lessons_print_them() {
        for (input, want) in [
            ("1048576", 1_048_576.0),
            ("1,048,576", 1_048_576.0),
            ("  1,048,576  ", 1_048_576.0),
            ("1 048 576", 1_048_576.0),
            ("1\u{202f}048\u{202f}576", 1_048_576.0),
            ("1_048_576", 1_048_576.0),
            ("1.048.576", 1_048_576.0),
            ("1,048,576.5", 1_048_576.5),
            ("1.048.576,5", 1_048_576.5),
            ("14.9", 14.9),
            ("14,9", 14.9),
            ("0,125", 0.125),
            ("1,048", 1048.0),
            ("-3", -3.0),
            ("\u{2212}3", -3.0),
            ("+2.5", 2.5),
            ("1.5e9", 1.5e9),
            ("2E-3", 0.002),
            (".5", 0.5),
        ] {
            let got = ok(input, "parameters");
            assert!((got - want).abs() < 1e-9, "{input:?}: {got} != {want}");
        }
    }

    #[test]
    fn a_trailing_unit_is_accepted_when_it_is_the_questions() {
        assert_eq!(ok("14.9 GiB", "GiB"), 14.9);
        assert_eq!(ok("14.9gib", "GiB"), 14.9);
        assert_eq!(ok("1,048,576 multiply-adds", "multiply-adds"), 1_048_576.0);
        assert_eq!(ok("76 waves", "waves"), 76.0);
        assert_eq!(ok("1 wave", "waves"), 1.0);
        assert_eq!(ok("20×", "×"), 20.0);
        assert_eq!(ok("20 x", "×"), 20.0);
        assert_eq!(ok("20x", "times"), 20.0);
        assert_eq!(ok("50 %", "%"), 50.0);
        assert_eq!(ok("7.05 ms.", "ms"), 7.05);
        assert_eq!(ok("7.", "ms"), 7.0);
    }

    #[test]
    fn a_different_unit_is_refused_and_named() {
        let err = parse_answer("14.9 GB", "GiB").unwrap_err();
        assert_eq!(
            err,
            NumericError::WrongUnit {
                given: "GB".into(),
                expected: "GiB".into()
            }
        );
        let message = err.to_string();
        assert!(
            message.contains("GiB") && message.contains("GB"),
            "{message}"
        );
        assert!(matches!(
            parse_answer("20 ms", "×"),
            Err(NumericError::WrongUnit { .. })
        ));
    }

    #[test]
    fn numbers_display_as_the_lessons_print_them_and_read_back() {
        for (x, shown) in [
            (1_048_576.0, "1,048,576"),
            (68_719_476_736.0, "68,719,476,736"),
            (14.9, "14.9"),
            (999.0, "999"),
            (-4096.5, "-4,096.5"),
            (0.05, "0.05"),
        ] {
            assert_eq!(display(x), shown);
            assert_eq!(parse_answer(shown, "ms"), Ok(x));
        }
    }

    #[test]
    fn what_is_not_a_number_is_refused() {
        assert_eq!(parse_answer("   ", "ms"), Err(NumericError::Empty));
        for bad in [
            "lots",
            "1,04,8576",
            "10 48",
            "1.2.3,4",
            "1,2,3",
            "12abc3",
            "e5",
            ",5",
            "--3",
            "inf",
            "NaN",
            "1e999",
        ] {
            assert!(
                matches!(parse_answer(bad, "ms"), Err(NumericError::NotANumber(_))),
                "{bad:?} was read as {:?}",
                parse_answer(bad, "ms")
            );
        }
    }
}

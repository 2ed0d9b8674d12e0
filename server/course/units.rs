//! A lesson's size words agree with its experiments' own sizes. When a section describes
//! a live experiment ("copies buffers from 1 KiB up to 1 GiB") and then places it, every
//! size it writes in decimal or binary units (`KB` = 1,000 bytes, `KiB` = 1,024) must not
//! name one of the experiment's sizes in the wrong system: `1 KB` for a sweep that starts
//! at 1,024 bytes is a unit slip, and one the eye reads past. The experiment's sizes are
//! its `*_bytes` parameters (defaults overlaid with the directive's own) and the fixed
//! sizes it declares ([`crate::experiments::Experiment::SIZE_BOUNDS`]). A size that names
//! none of them in either system is some other quantity and is left alone.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use super::problem::{LineIndex, Problem};

/// The byte units, each with its counterpart in the other system.
const UNITS: &[(&str, f64, f64)] = &[
    ("KiB", 1024.0, 1e3),
    ("MiB", 1048576.0, 1e6),
    ("GiB", 1073741824.0, 1e9),
    ("TiB", 1099511627776.0, 1e12),
    ("KB", 1e3, 1024.0),
    ("kB", 1e3, 1024.0),
    ("MB", 1e6, 1048576.0),
    ("GB", 1e9, 1073741824.0),
    ("TB", 1e12, 1099511627776.0),
];

/// One size written in prose: the text as written, the bytes it means, and the bytes the
/// same number means in the other system.
#[derive(Debug, PartialEq)]
pub struct Size {
    /// The size as the lesson writes it (`1 KB`).
    pub written: String,
    /// The bytes it means.
    pub bytes: f64,
    /// The bytes the same number means in the other system (`1 KiB` for `1 KB`).
    pub other_system: f64,
}

/// Every size in `text`: a number (digits, `,` and `.` between digits), an optional
/// space, and a byte unit that ends the word (`GB/s` is a rate, not a size).
pub fn sizes(text: &str) -> Vec<Size> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if !c.is_ascii_digit() || (i > 0 && chars[i - 1].1.is_alphanumeric()) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].1.is_ascii_digit()
                || (matches!(chars[j].1, ',' | '.')
                    && chars.get(j + 1).is_some_and(|(_, d)| d.is_ascii_digit())))
        {
            j += 1;
        }
        let number_end = chars.get(j).map_or(text.len(), |(o, _)| *o);
        let number: Option<f64> = text[start..number_end].replace(',', "").parse().ok();
        let rest = text[number_end..].trim_start_matches([' ', '\u{a0}', '\u{202f}']);
        for (unit, scale, other) in UNITS {
            if let (Some(value), Some(tail)) = (number, rest.strip_prefix(unit))
                && !tail.starts_with(|c: char| c.is_alphanumeric() || c == '/')
            {
                let end = text.len() - tail.len();
                out.push(Size {
                    written: text[start..end].to_string(),
                    bytes: value * scale,
                    other_system: value * other,
                });
                break;
            }
        }
        i = j.max(i + 1);
    }
    out
}

/// Whether two byte counts are the same size (they come from decimal text).
fn same(a: f64, b: u64) -> bool {
    (a - b as f64).abs() <= 1e-9 * (b as f64).max(1.0)
}

/// The sizes experiment directive `directive` uses, with `body` (its TOML parameters)
/// overlaid on its defaults; `None` for a directive that is not a registered experiment.
fn experiment_sizes(directive: &str, body: &str) -> Option<Vec<u64>> {
    let experiment = crate::experiments::by_directive(directive)?;
    let mut sizes = experiment.size_bounds().to_vec();
    let mut collect = |key: &str, value: Option<u64>| {
        if key.ends_with("_bytes")
            && let Some(bytes) = value
        {
            sizes.push(bytes);
        }
    };
    if let serde_json::Value::Object(defaults) = experiment.defaults() {
        for (key, value) in &defaults {
            collect(key, value.as_u64());
        }
    }
    if let Ok(table) = body.parse::<toml::Table>() {
        for (key, value) in &table {
            collect(key, value.as_integer().and_then(|v| u64::try_from(v).ok()));
        }
    }
    Some(sizes)
}

/// Checks `body` (the lesson after its front matter) and appends its problems.
pub fn check(file: &str, body: &str, first_line: usize, problems: &mut Vec<Problem>) {
    let lines = LineIndex::new(body, first_line);
    let options = Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_MATH;
    // The prose of the current section: (text, line) per block.
    let mut section: Vec<(String, usize)> = Vec::new();
    let mut block: Option<(String, usize)> = None;
    let mut fence: Option<(String, String)> = None;
    let mut depth = 0usize;
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => section.clear(),
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                fence = Some((info.to_string(), String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                let Some((info, code)) = fence.take() else {
                    continue;
                };
                let mut words = info.split_whitespace();
                if words.next() != Some("experiment") {
                    continue;
                }
                let Some(directive) = words.next() else {
                    continue;
                };
                let Some(bounds) = experiment_sizes(directive, &code) else {
                    continue;
                };
                for (text, line) in &section {
                    for size in sizes(text) {
                        let names_one = bounds.iter().any(|&b| same(size.bytes, b));
                        if let Some(&meant) = bounds
                            .iter()
                            .find(|&&b| same(size.other_system, b))
                            .filter(|_| !names_one)
                        {
                            problems.push(Problem::new(
                                file,
                                *line,
                                format!(
                                    "`{}` is {} bytes, but experiment `{directive}` uses {meant} bytes: write the size in the other system's unit (KB = 1,000 bytes, KiB = 1,024)",
                                    size.written, size.bytes
                                ),
                            ));
                        }
                    }
                }
            }
            Event::Start(Tag::Paragraph | Tag::Item) => {
                depth += 1;
                if block.is_none() {
                    block = Some((String::new(), lines.line(range.start)));
                }
            }
            Event::End(TagEnd::Paragraph | TagEnd::Item) => {
                depth = depth.saturating_sub(1);
                if depth == 0
                    && let Some(done) = block.take()
                {
                    section.push(done);
                }
            }
            Event::Text(text) | Event::Code(text) => {
                if let Some((_, code)) = fence.as_mut() {
                    code.push_str(&text);
                } else if let Some((prose, _)) = block.as_mut() {
                    prose.push_str(&text);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((prose, _)) = block.as_mut() {
                    prose.push(' ');
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(body: &str) -> Vec<String> {
        let mut out = Vec::new();
        check("l.md", body, 1, &mut out);
        out.into_iter()
            .map(|p| format!("{}: {}", p.line, p.message))
            .collect()
    }

    #[test]
    fn sizes_are_numbers_with_byte_units_not_rates() {
        let found = sizes("from 1 KB up to 1 GiB at 32 GB/s, 12.58 MB, 2,048 KiB");
        let written: Vec<&str> = found.iter().map(|s| s.written.as_str()).collect();
        assert_eq!(written, ["1 KB", "1 GiB", "12.58 MB", "2,048 KiB"]);
        assert_eq!(found[0].bytes, 1000.0);
        assert_eq!(found[0].other_system, 1024.0);
        assert_eq!(found[3].bytes, 2048.0 * 1024.0);
        assert!(sizes("H100 and 4096 × 4096, 8 KBytes").is_empty());
    }

    #[test]
    fn a_size_in_the_wrong_system_for_the_experiment_is_a_problem() {
        let bad = "## Copies\n\nIt copies buffers from 1 KB up to 1 GiB.\n\n```experiment transfer-benchmark\nmax_bytes = 1073741824\n```\n";
        let found = problems(bad);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with(
                "3: `1 KB` is 1000 bytes, but experiment `transfer-benchmark` uses 1024 bytes"
            ),
            "{found:?}"
        );
        let cap_in_gb = "## Copies\n\nIt copies buffers from 1 KiB up to 1 GB.\n\n```experiment transfer-benchmark\nmax_bytes = 1073741824\n```\n";
        let found = problems(cap_in_gb);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("`1 GB`"), "{found:?}");
        let default_cap =
            "## Copies\n\nUp to 1 GB by default.\n\n```experiment transfer-benchmark\n```\n";
        assert_eq!(
            problems(default_cap).len(),
            1,
            "the default max_bytes counts"
        );
    }

    #[test]
    fn right_units_other_sizes_and_other_sections_pass() {
        let good = "## Copies\n\nIt copies buffers from 1 KiB up to 1 GiB; the batch is 12.58 MB.\n\n```experiment transfer-benchmark\nmax_bytes = 1073741824\n```\n";
        assert!(problems(good).is_empty(), "{:?}", problems(good));
        let earlier_section = "## Units\n\n1 KB = 1,000 bytes.\n\n## Copies\n\nSee below.\n\n```experiment transfer-benchmark\n```\n";
        assert!(
            problems(earlier_section).is_empty(),
            "{:?}",
            problems(earlier_section)
        );
        let no_experiment =
            "## Copies\n\nFrom 1 KB.\n\n```widget transfer-simulator\nbandwidth_gbps = 32\n```\n";
        assert!(problems(no_experiment).is_empty());
    }
}

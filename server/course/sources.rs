//! Every figure in a lesson points to its source. A paragraph, list item or table that
//! states a figure — a number with a unit of size, rate, time, clock, power, a
//! percentage or a factor (`32 GB/s`, `14.56 GiB`, `989 TFLOP/s`, `500 cycles`, `8.8×`)
//! — must carry a footnote reference (`[^pcie]`) in the same block; every footnote is
//! defined once and cited at least once (a source nothing cites backs no claim, and is
//! usually left over from an edit that moved the claim), and every definition names a
//! primary source with a link. Definitions sit under the lesson's last heading,
//! `## Sources`, so every lesson ends with its sources.
//! Code, math and directives are not prose and are not checked.

use std::collections::BTreeMap;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::problem::{LineIndex, Problem};

/// Units that make a number a figure to be sourced (after an optional space).
const UNITS: &[&str] = &[
    "PFLOP/s", "TFLOP/s", "GFLOP/s", "TFLOPS", "TOPS", "TB/s", "GB/s", "GiB/s", "MB/s", "Gbit/s",
    "GT/s", "TiB", "TB", "GiB", "GB", "MiB", "MB", "KiB", "KB", "cycles", "GHz", "MHz", "ms", "µs",
    "ns", "W",
];
/// Units written straight after the number: a percentage, a factor (`8.8×`; `2048 × 2048`
/// is a shape, not a factor).
const ATTACHED: &[&str] = &["%", "×"];

/// The marker that exempts a paragraph whose numbers are made up for a worked example
/// ("say the CPU needs 10 ms per step"). It goes inside the paragraph, best at its end:
/// at the start of a line Markdown reads it as an HTML block, which lessons refuse.
/// The renderer drops it from the page.
pub const ILLUSTRATIVE: &str = "<!-- illustrative -->";

/// The first figure in `text`, if any: digits (with `,` and `.`), then one of
/// [`ATTACHED`], or an optional space and one of [`UNITS`]; the unit must end the word.
pub fn first_figure(text: &str) -> Option<String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        let after_word = i > 0 && chars[i - 1].1.is_alphanumeric();
        if !c.is_ascii_digit() || after_word {
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
        let attached = &text[number_end..];
        let rest = attached.trim_start_matches([' ', '\u{a0}', '\u{202f}']);
        let candidates = ATTACHED
            .iter()
            .map(|unit| (attached, unit))
            .chain(UNITS.iter().map(|unit| (rest, unit)));
        for (rest, unit) in candidates {
            if let Some(tail) = rest.strip_prefix(unit)
                && !tail.starts_with(|c: char| c.is_alphanumeric())
            {
                let end = text.len() - tail.len();
                return Some(text[start..end].to_string());
            }
        }
        i = j.max(i + 1);
    }
    None
}

/// One block of prose being read: its text, its footnote references, where it starts.
#[derive(Default)]
struct Block {
    text: String,
    notes: usize,
    line: usize,
    illustrative: bool,
}

/// Checks `body` (the lesson after its front matter) and appends its problems.
pub fn check(file: &str, body: &str, first_line: usize, problems: &mut Vec<Problem>) {
    let lines = LineIndex::new(body, first_line);
    let options = Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_MATH;
    let mut stack: Vec<Block> = Vec::new();
    let mut referenced: BTreeMap<String, usize> = BTreeMap::new();
    let mut defined: BTreeMap<String, usize> = BTreeMap::new();
    let mut definition: Option<(String, usize, bool)> = None;
    let mut last_heading: Option<String> = None;
    let mut heading_text: Option<String> = None;
    let mut sources_heading = false;
    let mut previous_had_note = false;
    let mut in_code = false;
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        let line = lines.line(range.start);
        match event {
            Event::Start(Tag::Heading { level, .. }) if level <= HeadingLevel::H2 => {
                heading_text = Some(String::new());
            }
            Event::End(TagEnd::Heading(level)) if level <= HeadingLevel::H2 => {
                let text = heading_text.take().unwrap_or_default();
                sources_heading = text.trim() == "Sources";
                last_heading = Some(text);
            }
            Event::Start(Tag::CodeBlock(_)) => in_code = true,
            Event::End(TagEnd::CodeBlock) => in_code = false,
            Event::Start(Tag::FootnoteDefinition(label)) => {
                if !sources_heading {
                    problems.push(Problem::new(
                        file,
                        line,
                        format!(
                            "footnote [^{label}] is defined outside the final `## Sources` section"
                        ),
                    ));
                }
                if defined.insert(label.to_string(), line).is_some() {
                    problems.push(Problem::new(
                        file,
                        line,
                        format!("footnote [^{label}] is defined twice: keep one definition"),
                    ));
                }
                definition = Some((label.to_string(), line, false));
            }
            Event::End(TagEnd::FootnoteDefinition) => {
                if let Some((label, at, false)) = definition.take() {
                    problems.push(Problem::new(
                        file,
                        at,
                        format!("footnote [^{label}] names no source: give the primary source with a link"),
                    ));
                }
            }
            Event::Start(Tag::Link { .. }) => {
                if let Some((_, _, linked)) = definition.as_mut() {
                    *linked = true;
                }
            }
            Event::Start(Tag::Paragraph | Tag::Table(_) | Tag::Item) if definition.is_none() => {
                stack.push(Block {
                    line,
                    ..Block::default()
                });
            }
            Event::End(TagEnd::Paragraph | TagEnd::Table | TagEnd::Item)
                if definition.is_none() =>
            {
                let Some(block) = stack.pop() else { continue };
                let table = matches!(event, Event::End(TagEnd::Table));
                let sourced = block.notes > 0 || (table && previous_had_note) || block.illustrative;
                if let Some(figure) = first_figure(&block.text).filter(|_| !sourced) {
                    problems.push(Problem::new(
                        file,
                        block.line,
                        format!("`{figure}` has no source: add a footnote reference ([^name]) in this paragraph and define it under `## Sources`"),
                    ));
                }
                // An undefined reference stays literal text: pulldown-cmark only links
                // references whose definition exists.
                for literal in block.text.split("[^").skip(1) {
                    if let Some(label) = literal.split(']').next().filter(|l| !l.contains(' ')) {
                        problems.push(Problem::new(
                            file,
                            block.line,
                            format!("footnote [^{label}] is referenced but never defined under `## Sources`"),
                        ));
                    }
                }
                previous_had_note = block.notes > 0;
                // A note counts for the enclosing block too (a loose list item).
                if let Some(parent) = stack.last_mut() {
                    parent.notes += block.notes;
                }
            }
            Event::FootnoteReference(label) => {
                referenced.entry(label.to_string()).or_insert(line);
                if let Some(block) = stack.last_mut() {
                    block.notes += 1;
                }
            }
            Event::Text(text) if !in_code => {
                if let Some(heading) = heading_text.as_mut() {
                    heading.push_str(&text);
                } else if definition.is_none()
                    && let Some(block) = stack.last_mut()
                {
                    block.text.push_str(&text);
                }
            }
            Event::SoftBreak | Event::HardBreak | Event::Code(_) => {
                if let Some(block) = stack.last_mut() {
                    block.text.push(' ');
                }
            }
            Event::InlineHtml(html) if html.trim() == ILLUSTRATIVE => {
                if let Some(block) = stack.last_mut() {
                    block.illustrative = true;
                }
            }
            Event::Html(html) if html.trim_start().starts_with(ILLUSTRATIVE) => {
                problems.push(Problem::new(
                    file,
                    line,
                    format!("{ILLUSTRATIVE} at the start of a line makes the whole line an HTML block: put it at the end of the paragraph"),
                ));
            }
            _ => {}
        }
    }
    for (label, line) in &referenced {
        if !defined.contains_key(label) {
            problems.push(Problem::new(
                file,
                *line,
                format!("footnote [^{label}] is referenced but never defined under `## Sources`"),
            ));
        }
    }
    for (label, line) in &defined {
        if !referenced.contains_key(label) {
            problems.push(Problem::new(
                file,
                *line,
                format!("footnote [^{label}] is defined but never cited: cite it where its claim is made, or remove it"),
            ));
        }
    }
    if !defined.is_empty() && last_heading.as_deref().map(str::trim) != Some("Sources") {
        problems.push(Problem::new(
            file,
            first_line,
            "the lesson's last section must be `## Sources`, holding its footnote definitions",
        ));
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
    fn figures_are_numbers_with_units() {
        assert_eq!(
            first_figure("PCIe 4.0 x16 reaches 32 GB/s."),
            Some("32 GB/s".into())
        );
        assert_eq!(first_figure("about 8.8× faster"), Some("8.8×".into()));
        assert_eq!(first_figure("a 14.56 GiB card"), Some("14.56 GiB".into()));
        assert_eq!(first_figure("1,024 tasks in 4 rounds"), None);
        assert_eq!(first_figure("FP32 and 2021 and H100"), None);
        assert_eq!(first_figure("6 ms"), Some("6 ms".into()));
        assert_eq!(first_figure("6 msec"), None, "a unit must end the word");
        assert_eq!(first_figure("75%"), Some("75%".into()));
        assert_eq!(
            first_figure("a 2048 × 2048 matrix"),
            None,
            "a shape, not a factor"
        );
        assert_eq!(first_figure("75 % of"), None);
    }

    #[test]
    fn a_figure_needs_a_note_in_its_block_and_the_note_a_linked_source() {
        let body = "Intro.\n\nA link does 32 GB/s.[^pcie]\n\nBut 900 GB/s here.\n\n- a list item of 5 ms\n\n## Sources\n\n[^pcie]: PCI-SIG, PCIe 4.0. <https://pcisig.com>\n";
        assert_eq!(
            problems(body),
            [
                "5: `900 GB/s` has no source: add a footnote reference ([^name]) in this paragraph and define it under `## Sources`",
                "7: `5 ms` has no source: add a footnote reference ([^name]) in this paragraph and define it under `## Sources`",
            ]
        );
        let unlinked = "It does 32 GB/s.[^a] And[^b].\n\n## Sources\n\n[^a]: A book.\n";
        let found = problems(unlinked);
        assert!(
            found.iter().any(|p| p.contains("[^a] names no source")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|p| p.contains("[^b] is referenced but never defined")),
            "{found:?}"
        );
        let misplaced = "It does 32 GB/s.[^a]\n\n[^a]: <https://x.org>\n\n## Recap\n\nDone.\n";
        let found = problems(misplaced);
        assert!(
            found.iter().any(|p| p.contains("outside the final")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|p| p.contains("last section must be")),
            "{found:?}"
        );
    }

    #[test]
    fn every_definition_is_cited_once_defined() {
        let body = "Cited here.[^a]\n\n## Sources\n\n[^a]: A. <https://a.org>\n\n[^orphan]: B. <https://b.org>\n\n[^a]: Again. <https://a.org>\n";
        let found = problems(body);
        assert!(
            found
                .iter()
                .any(|p| p == "7: footnote [^orphan] is defined but never cited: cite it where its claim is made, or remove it"),
            "{found:?}"
        );
        assert!(
            found.iter().any(|p| p.contains("[^a] is defined twice")),
            "{found:?}"
        );
        assert!(
            !found
                .iter()
                .any(|p| p.contains("[^a] is defined but never cited")),
            "{found:?}"
        );
        let cited_from_a_definition = "Claim.[^a]\n\n## Sources\n\n[^a]: A, see also [^b]. <https://a.org>\n\n[^b]: B. <https://b.org>\n";
        assert!(
            problems(cited_from_a_definition).is_empty(),
            "{:?}",
            problems(cited_from_a_definition)
        );
    }

    #[test]
    fn an_illustrative_paragraph_may_make_up_its_numbers() {
        assert!(problems("Say a step takes 10 ms. <!-- illustrative -->\n").is_empty());
        assert!(problems("Say a step\ntakes <!-- illustrative --> 10 ms.\n").is_empty());
        let leading = problems("<!-- illustrative --> Say a step takes 10 ms.\n");
        assert_eq!(leading.len(), 1, "{leading:?}");
        assert!(leading[0].contains("end of the paragraph"), "{leading:?}");
        assert_eq!(problems("Say a step takes 10 ms.\n").len(), 1);
    }

    #[test]
    fn code_math_and_tables_with_a_sourced_caption_pass() {
        let body = "```python\nx = 32  # GB/s\n```\n\nMath $3 \\times 4$ only.\n\nRates below.[^t]\n\n| a | b |\n|---|---|\n| 1 | 2 GB/s |\n\n## Sources\n\n[^t]: T. <https://t.org>\n";
        assert!(problems(body).is_empty(), "{:?}", problems(body));
    }
}

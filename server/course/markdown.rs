//! The Markdown preprocessor chain, in the spirit of mdBook: pulldown-cmark parses a
//! lesson body into events, and each event passes through the preprocessors before the
//! HTML writer sees it.
//!
//! - headings get stable ids and feed the table of contents;
//! - fenced `widget`, `experiment` and `callout` blocks become directive placeholders;
//! - other fenced code is highlighted by syntect;
//! - `$…$` and `$$…$$` math becomes MathML;
//! - links are recorded with their line so the loader can check internal ones;
//! - raw HTML is refused, so every page stays within what the stylesheet and CSP expect.
//!
//! Problems are collected with their file line rather than aborting, so `gpulab check`
//! reports every one in a single run.

use std::collections::HashSet;
use std::ops::Range;

use pulldown_cmark::{CodeBlockKind, CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::directives::{self, Kind};
use super::highlight::Highlighter;
use super::html::{escape, slugify};
use super::math::to_mathml;
use super::outline::Outline;
use super::problem::{LineIndex, Problem};

/// One heading in a lesson's table of contents.
#[derive(Debug, Clone)]
pub struct TocEntry {
    /// 2 for `##`, 3 for `###`.
    pub level: u8,
    /// The heading's text.
    pub text: String,
    /// The heading's id, the target of `#id` links.
    pub id: String,
}

/// A link found in a lesson, kept for the loader's cross-lesson check.
#[derive(Debug, Clone)]
pub struct LinkRef {
    /// The link target as written.
    pub dest: String,
    /// The file line it is on.
    pub line: usize,
}

/// A rendered Markdown body and what the preprocessors learned about it.
#[derive(Debug, Default, Clone)]
pub struct Rendered {
    /// The HTML.
    pub html: String,
    /// `##` and `###` headings in order.
    pub toc: Vec<TocEntry>,
    /// Every heading id, for `#id` link checks.
    pub anchors: HashSet<String>,
    /// Every link, for the cross-lesson check.
    pub links: Vec<LinkRef>,
    /// Directives placed, as `widget name` or `experiment name`.
    pub directives: Vec<String>,
    /// Formulas rendered to MathML.
    pub math_count: usize,
    /// Highlighted code blocks.
    pub code_count: usize,
    /// Words of prose (code excluded), for reading-time checks.
    pub words: usize,
    /// Sections with their text, and code blocks, for search and downloads.
    pub outline: Outline,
}

/// Renders Markdown bodies; holds the highlighter built at start-up.
pub struct Renderer<'h> {
    highlighter: &'h Highlighter,
}

struct Pass<'a> {
    file: &'a str,
    lines: LineIndex,
    problems: &'a mut Vec<Problem>,
    out: Rendered,
    /// Inside a heading: its words belong to the heading, not the section before it.
    in_heading: bool,
}

fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_MATH
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_SMART_PUNCTUATION
}

impl<'h> Renderer<'h> {
    /// A renderer using `highlighter` for code blocks.
    pub fn new(highlighter: &'h Highlighter) -> Self {
        Self { highlighter }
    }

    /// Renders `body` of `file`, whose first line is `first_line` of the file; problems
    /// are appended to `problems`.
    pub fn render(
        &self,
        file: &str,
        body: &str,
        first_line: usize,
        problems: &mut Vec<Problem>,
    ) -> Rendered {
        let mut pass = Pass {
            file,
            lines: LineIndex::new(body, first_line),
            problems,
            out: Rendered::default(),
            in_heading: false,
        };
        let events = self.transform(&mut pass, body);
        pulldown_cmark::html::push_html(&mut pass.out.html, events.into_iter());
        pass.out.html = scrollable_tables(&pass.out.html);
        pass.out.outline.tidy();
        pass.out
    }

    fn transform<'a>(&self, pass: &mut Pass<'_>, body: &'a str) -> Vec<Event<'a>> {
        let mut events = Vec::new();
        let mut iter = Parser::new_ext(body, options()).into_offset_iter();
        while let Some((event, range)) = iter.next() {
            match event {
                Event::Start(Tag::Heading {
                    level,
                    classes,
                    attrs,
                    ..
                }) => {
                    let mut inner = Vec::new();
                    let mut text = String::new();
                    pass.in_heading = true;
                    for (e, r) in iter.by_ref() {
                        match &e {
                            Event::End(TagEnd::Heading(_)) => break,
                            Event::Text(t) | Event::Code(t) => text.push_str(t),
                            _ => {}
                        }
                        inner.push(pass.inline(e, r));
                    }
                    pass.in_heading = false;
                    if level == HeadingLevel::H1 {
                        pass.problem(&range, "use `##` and `###` headings; the page already renders the title as the only `#` heading");
                    }
                    let id = pass.anchor(&text, level);
                    events.push(Event::Start(Tag::Heading {
                        level,
                        id: Some(id.into()),
                        classes,
                        attrs,
                    }));
                    events.extend(inner);
                    events.push(Event::End(TagEnd::Heading(level)));
                }
                Event::Start(Tag::CodeBlock(kind)) => {
                    let mut code = String::new();
                    for (e, _) in iter.by_ref() {
                        match e {
                            Event::End(TagEnd::CodeBlock) => break,
                            Event::Text(t) => code.push_str(&t),
                            _ => {}
                        }
                    }
                    let info = match kind {
                        CodeBlockKind::Fenced(info) => info.to_string(),
                        CodeBlockKind::Indented => String::new(),
                    };
                    let html = self.code_block(pass, &range, info.trim(), &code);
                    events.push(Event::Html(html.into()));
                }
                other => events.push(pass.inline(other, range)),
            }
        }
        events
    }

    fn code_block(
        &self,
        pass: &mut Pass<'_>,
        range: &Range<usize>,
        info: &str,
        code: &str,
    ) -> String {
        let mut words = info.split_whitespace();
        let first = words.next().unwrap_or("");
        let name = words.next().unwrap_or("");
        let result = match first {
            "widget" | "experiment" => {
                let kind = if first == "widget" { Kind::Widget } else { Kind::Experiment };
                pass.out.directives.push(format!("{first} {name}"));
                directives::render(kind, name, code)
            }
            "callout" => directives::callout_label(name).map(|label| {
                let inner = self.transform(pass, code);
                let mut html = format!("<aside class=\"callout callout-{name}\" aria-label=\"{label}\">\n<p class=\"callout-label\">{label}</p>\n");
                pulldown_cmark::html::push_html(&mut html, inner.into_iter());
                html.push_str("</aside>\n");
                html
            }),
            lang => {
                pass.out.code_count += 1;
                pass.out.outline.code(lang, code);
                if let Some(block) = pass.out.outline.code.last_mut() {
                    block.info = info.split_whitespace().skip(1).collect::<Vec<_>>().join(" ");
                }
                self.highlighter.highlight(lang, code)
            }
        };
        result.unwrap_or_else(|message| {
            pass.problem(range, &message);
            format!(
                "<pre class=\"code\" tabindex=\"0\"><code>{}</code></pre>\n",
                escape(code)
            )
        })
    }
}

impl Pass<'_> {
    fn problem(&mut self, range: &Range<usize>, message: &str) {
        let line = self.lines.line(range.start);
        self.problems.push(Problem::new(self.file, line, message));
    }

    fn anchor(&mut self, text: &str, level: HeadingLevel) -> String {
        let base = match slugify(text) {
            s if s.is_empty() => "section".to_string(),
            s => s,
        };
        let mut id = base.clone();
        let mut n = 2;
        while self.out.anchors.contains(&id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        self.out.anchors.insert(id.clone());
        let level = match level {
            HeadingLevel::H2 => 2,
            HeadingLevel::H3 => 3,
            _ => 0,
        };
        if level > 0 {
            self.out.outline.heading(level, &id, text);
            self.out.toc.push(TocEntry {
                level,
                text: text.to_string(),
                id: id.clone(),
            });
        }
        id
    }

    fn inline<'a>(&mut self, event: Event<'a>, range: Range<usize>) -> Event<'a> {
        match event {
            Event::InlineMath(tex) | Event::DisplayMath(tex) => {
                let display = body_slice_is_display(&range, &tex);
                match to_mathml(&tex, display) {
                    Ok(html) => {
                        self.out.math_count += 1;
                        Event::InlineHtml(html.into())
                    }
                    Err(message) => {
                        self.problem(&range, &message);
                        Event::Code(tex)
                    }
                }
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let line = self.lines.line(range.start);
                self.out.links.push(LinkRef {
                    dest: dest_url.to_string(),
                    line,
                });
                Event::Start(Tag::Link {
                    link_type,
                    dest_url,
                    title,
                    id,
                })
            }
            // Marks a paragraph's numbers as made up (course::sources); not shown.
            Event::InlineHtml(raw) if raw.trim() == super::sources::ILLUSTRATIVE => {
                Event::Text("".into())
            }
            Event::Html(raw) | Event::InlineHtml(raw) => {
                self.problem(
                    &range,
                    "raw HTML is not allowed in lessons; use Markdown or a directive",
                );
                Event::Text(raw)
            }
            Event::Text(text) => {
                self.out.words += text.split_whitespace().count();
                if !self.in_heading {
                    self.out.outline.text(&text);
                }
                Event::Text(text)
            }
            Event::Code(code) => {
                if !self.in_heading {
                    self.out.outline.text(&code);
                }
                Event::Code(code)
            }
            Event::SoftBreak | Event::HardBreak => {
                self.out.outline.space();
                event
            }
            Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::TableCell
                | TagEnd::BlockQuote(_)
                | TagEnd::FootnoteDefinition,
            ) => {
                self.out.outline.space();
                event
            }
            other => other,
        }
    }
}

/// Display math is `$$…$$`: the source range is four characters longer than the TeX.
fn body_slice_is_display(range: &Range<usize>, tex: &CowStr<'_>) -> bool {
    range.len() >= tex.len() + 4
}

/// Wraps every table in a keyboard-focusable, labelled region that scrolls sideways on
/// narrow screens (a scrolling region must be reachable by keyboard). Each region is
/// numbered so that no two landmarks on a page share a name.
fn scrollable_tables(html: &str) -> String {
    let tables = html.matches("<table>").count();
    let mut out = String::with_capacity(html.len() + tables * 120);
    let mut rest = html;
    let mut n = 0;
    while let Some(at) = rest.find("<table>") {
        n += 1;
        out.push_str(&rest[..at]);
        let name = if tables == 1 {
            "Table (scrolls sideways)".to_string()
        } else {
            format!("Table {n} of {tables} (scrolls sideways)")
        };
        out.push_str(&format!(
            "<div class=\"table-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"{name}\"><table>"
        ));
        rest = &rest[at + "<table>".len()..];
    }
    out.push_str(rest);
    out.replace("</table>", "</table></div>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(body: &str) -> (Rendered, Vec<Problem>) {
        let highlighter = Highlighter::new();
        let mut problems = Vec::new();
        let out = Renderer::new(&highlighter).render("l.md", body, 10, &mut problems);
        (out, problems)
    }

    #[test]
    fn headings_get_ids_and_toc_entries() {
        let (out, problems) = render("## Why GPUs\n\ntext\n\n### Why GPUs\n");
        assert!(problems.is_empty(), "{problems:?}");
        assert!(
            out.html.contains("<h2 id=\"why-gpus\">Why GPUs</h2>"),
            "{}",
            out.html
        );
        assert!(out.html.contains("<h3 id=\"why-gpus-2\">"), "{}", out.html);
        assert_eq!(out.toc.len(), 2);
    }

    #[test]
    fn math_becomes_mathml_inline_and_display() {
        let (out, problems) = render("Inline $x^2$ here.\n\n$$\nS = \\frac{1}{2}\n$$\n");
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(out.math_count, 2);
        assert!(out.html.contains("<math"), "{}", out.html);
        assert!(out.html.contains("display=\"block\""), "{}", out.html);
    }

    #[test]
    fn directives_and_callouts_render_and_unknown_ones_report_their_line() {
        let body = "Intro\n\n```widget amdahl\np = 0.9\n```\n\n```callout mistakes\n- **Bold** item\n```\n\n```widget nope\n```\n";
        let (out, problems) = render(body);
        assert!(out.html.contains("data-widget=\"amdahl\""));
        assert!(
            out.html
                .contains("<aside class=\"callout callout-mistakes\"")
        );
        assert!(out.html.contains("<strong>Bold</strong>"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].line, 20);
        assert!(problems[0].message.contains("unknown widget `nope`"));
    }

    #[test]
    fn code_is_highlighted_and_raw_html_refused() {
        let (out, problems) = render("```python\nimport torch\n```\n\n<div>x</div>\n");
        assert_eq!(out.code_count, 1);
        assert!(out.html.contains("hl-"));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.contains("raw HTML"));
        assert_eq!(problems[0].line, 14);
    }

    #[test]
    fn the_illustrative_marker_is_allowed_and_not_shown() {
        let (out, problems) = render("Say a step takes 10 ms. <!-- illustrative -->\n");
        assert!(problems.is_empty(), "{problems:?}");
        assert!(out.html.contains("takes 10 ms."), "{}", out.html);
        assert!(!out.html.contains("illustrative"), "{}", out.html);
        let (_, problems) = render("Say <!-- other --> 10 ms.\n");
        assert_eq!(problems.len(), 1, "{problems:?}");
    }

    #[test]
    fn the_outline_follows_the_headings_and_keeps_the_code() {
        let body = "Opening `x`.\n\n## First step\n\nRun it:\n\n```python\nimport torch\n```\n\n```widget amdahl\n```\n\n### Then\n\n```text\nok\n```\n";
        let (out, problems) = render(body);
        assert!(problems.is_empty(), "{problems:?}");
        let sections = &out.outline.sections;
        let ids: Vec<_> = sections.iter().map(|s| s.id.as_deref()).collect();
        assert_eq!(ids, vec![None, Some("first-step"), Some("then")]);
        assert_eq!(sections[0].text, "Opening x.");
        assert_eq!(sections[1].text, "Run it: import torch");
        let code: Vec<_> = out
            .outline
            .code
            .iter()
            .map(|c| (c.lang.as_str(), c.section))
            .collect();
        assert_eq!(code, vec![("python", 1), ("text", 2)]);
    }

    #[test]
    fn links_are_recorded_with_lines() {
        let (out, _) = render("a\n\nsee [next](/lessons/x) and [b](#y)\n");
        let dests: Vec<_> = out
            .links
            .iter()
            .map(|l| (l.dest.as_str(), l.line))
            .collect();
        assert_eq!(dests, vec![("/lessons/x", 12), ("#y", 12)]);
    }
}

//! The "Check your script" page: a form for a training script, and after a check its
//! findings, each shown against the learner's own line (the line quoted, a caret under
//! the column), with the why, the fix, the lesson section by its title, the experiment
//! and (on a GPU server with a recent measurement) the measured cost, and how to keep
//! the line on purpose (`# noqa: CODE reason`). The script is only echoed back into
//! the form; it is not stored.

use askama::Template;

use super::page::Layout;
use crate::course::Course;
use crate::lint::report::Explained;
use crate::lint::{MAX_SOURCE_BYTES, RULES, Rule};

/// One finding as the page shows it.
pub struct Shown {
    /// The finding with its rule.
    pub f: Explained,
    /// The learner's line as written (trailing whitespace trimmed).
    pub code: String,
    /// What goes before the caret: the line up to the finding's column, every
    /// character but a tab turned into a space, so the caret lines up under it.
    pub caret_pad: String,
    /// Spaces as wide as the `12 | ` line-number gutter.
    pub gutter: String,
    /// `Lesson 5, "Async and timing": Logging without stalling`.
    pub section: String,
}

impl Shown {
    /// `finding` in `source`, its lesson section named from `course`.
    pub fn new(f: Explained, source: &str, course: &Course) -> Self {
        let code = source
            .lines()
            .nth(f.line.saturating_sub(1))
            .unwrap_or_default()
            .trim_end()
            .to_string();
        let caret_pad = code
            .chars()
            .take(f.column.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let rule = crate::lint::catalog::rule(f.code);
        let section = course
            .lessons
            .iter()
            .find(|l| l.slug == rule.lesson)
            .map(|lesson| {
                let heading = lesson
                    .toc
                    .iter()
                    .find(|t| t.id == rule.section)
                    .map(|t| format!(": {}", t.text))
                    .unwrap_or_default();
                format!(
                    "Lesson {}, \u{201c}{}\u{201d}{heading}",
                    lesson.number, lesson.title
                )
            })
            .unwrap_or_else(|| "The lesson section that explains it".into());
        Self {
            gutter: " ".repeat(f.line.to_string().len() + 3),
            f,
            code,
            caret_pad,
            section,
        }
    }
}

/// The page, before or after a check.
#[derive(Template)]
#[template(path = "lint.html", config = "web/askama.toml")]
pub struct LintPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The script as pasted (empty before a check).
    pub source: String,
    /// Whether a check ran (findings or an error are shown).
    pub checked: bool,
    /// The findings, in line order.
    pub findings: Vec<Shown>,
    /// Why the script could not be checked, when it could not.
    pub error: Option<String>,
    /// Largest script accepted, in kilobytes.
    pub max_kb: usize,
    /// Every rule, for the list at the end.
    pub rules: &'static [Rule],
    /// The page's script (saving the report).
    pub script: String,
}

impl<'a> LintPage<'a> {
    /// `text` as HTML: escaped, with each `` `span` `` set as code.
    pub fn code(&self, text: &str) -> String {
        code_spans(text)
    }

    /// The empty form.
    pub fn new(layout: &'a Layout, script: String) -> Self {
        Self {
            layout,
            source: String::new(),
            checked: false,
            findings: Vec::new(),
            error: None,
            max_kb: MAX_SOURCE_BYTES / 1024,
            rules: RULES,
            script,
        }
    }
}

/// `text` escaped for HTML, with the parts between backticks in `<code>`.
pub fn code_spans(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for (i, part) in text.split('`').enumerate() {
        let escaped = part
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;");
        if i % 2 == 1 {
            out.push_str("<code>");
            out.push_str(&escaped);
            out.push_str("</code>");
        } else {
            out.push_str(&escaped);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_is_shown_against_its_line_with_a_caret_and_its_section() {
        let course = Course::load(&crate::course::ContentSource::Dir(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("content"),
        ))
        .unwrap();
        let source = "import torch\nfor x in loader:\n\tloss = model(x.cuda()).sum()\n\tloss.backward()\n\topt.step()\n\tprint(loss.item())   \n";
        let finding = crate::lint::check(source)
            .unwrap()
            .into_iter()
            .find(|f| f.code == "GL101")
            .unwrap();
        let shown = Shown::new(Explained::new(&finding), source, &course);
        assert_eq!(shown.code, "\tprint(loss.item())");
        assert_eq!(
            shown.caret_pad, "\t      ",
            "a tab stays a tab, the rest are spaces"
        );
        assert!(shown.section.starts_with("Lesson 5, "), "{}", shown.section);
        assert!(
            shown.section.ends_with(": Logging without stalling"),
            "{}",
            shown.section
        );
    }

    #[test]
    fn backticks_become_code_and_html_is_escaped() {
        assert_eq!(
            code_spans("call `x.item()` <b>&"),
            "call <code>x.item()</code> &lt;b&gt;&amp;"
        );
        assert_eq!(code_spans("`<script>`"), "<code>&lt;script&gt;</code>");
    }
}

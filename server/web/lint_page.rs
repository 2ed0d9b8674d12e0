//! The "Check your script" page: a form for a training script, and after a check its
//! findings, each with the line, why, fix, lesson section, experiment and (on a GPU
//! server with a recent measurement) the measured cost. The script is only echoed back
//! into the form; it is not stored.

use askama::Template;

use super::page::Layout;
use crate::lint::report::Explained;
use crate::lint::{MAX_SOURCE_BYTES, RULES, Rule};

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
    pub findings: Vec<Explained>,
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
    fn backticks_become_code_and_html_is_escaped() {
        assert_eq!(
            code_spans("call `x.item()` <b>&"),
            "call <code>x.item()</code> &lt;b&gt;&amp;"
        );
        assert_eq!(code_spans("`<script>`"), "<code>&lt;script&gt;</code>");
    }
}

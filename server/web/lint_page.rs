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

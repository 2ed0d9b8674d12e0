//! The one list of rules: each with a stable code, a one-sentence why, a fix, the
//! lesson section that teaches it, the live experiment that shows its cost (with the
//! measured quantity to quote when this server has one), and the PyTorch version for an
//! API that changed. Codes are grouped by lesson theme — GL1xx syncs and timing, GL2xx
//! copies and input pipelines, GL3xx memory and the step, GL4xx mixed precision, GL5xx
//! devices — and a code never changes meaning once published.
//!
//! Every why is true for the PyTorch versions the course targets (2.12 and later) and
//! names, in `source`, the primary source it was checked against; the list is in
//! [`list`].

mod list;

pub use list::RULES;

/// One rule.
#[derive(Debug, serde::Serialize)]
pub struct Rule {
    /// Stable code, e.g. `GL101`.
    pub code: &'static str,
    /// Short kebab-case name, e.g. `sync-every-step`.
    pub name: &'static str,
    /// Why it matters, in one sentence.
    pub why: &'static str,
    /// What to write instead.
    pub fix: &'static str,
    /// The lesson's slug (`/lessons/<slug>`).
    pub lesson: &'static str,
    /// The heading id of the section that explains it.
    pub section: &'static str,
    /// The live experiment that shows the cost, if one does.
    pub experiment: Option<ExperimentLink>,
    /// For a deprecated or version-dependent API: since which PyTorch version, in words.
    pub changed_in: Option<&'static str>,
    /// The primary source the why was checked against, with its version.
    pub source: &'static str,
}

/// A live experiment in a lesson.
#[derive(Debug, serde::Serialize)]
pub struct ExperimentLink {
    /// The experiment's directive name, e.g. `training-run`.
    pub name: &'static str,
    /// The lesson it is placed in.
    pub lesson: &'static str,
    /// The heading id of the section it is placed in.
    pub section: &'static str,
    /// The quantity (`experiment.quantity`) whose latest value on this server measures
    /// the cost, and the sentence that quotes it (`{value}` is replaced).
    pub measured: Option<(&'static str, &'static str)>,
}

impl Rule {
    /// The lesson section's address on this site.
    pub fn lesson_url(&self) -> String {
        format!("/lessons/{}#{}", self.lesson, self.section)
    }
}

impl ExperimentLink {
    /// The experiment's address on this site.
    pub fn url(&self) -> String {
        format!("/lessons/{}#{}", self.lesson, self.section)
    }
}

/// The rule with `code`.
///
/// # Panics
/// When no rule has that code (a finding is only ever made with a listed code).
pub fn rule(code: &str) -> &'static Rule {
    RULES
        .iter()
        .find(|r| r.code == code)
        .unwrap_or_else(|| panic!("no rule {code}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_sorted() {
        let codes: Vec<_> = RULES.iter().map(|r| r.code).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(codes, sorted);
        let mut names: Vec<_> = RULES.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULES.len());
        assert!(RULES.len() >= 15);
    }

    #[test]
    fn every_rule_names_a_versioned_source() {
        for rule in RULES {
            assert!(
                rule.source.contains("PyTorch 2.") || rule.source.contains("Python 3."),
                "{}: {}",
                rule.code,
                rule.source
            );
        }
    }

    #[test]
    fn every_measured_sentence_quotes_its_value() {
        for rule in RULES {
            if let Some((_, sentence)) = rule.experiment.as_ref().and_then(|e| e.measured) {
                assert!(sentence.contains("{value}"), "{}", rule.code);
            }
        }
    }
}

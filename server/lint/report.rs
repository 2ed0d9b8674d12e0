//! Findings as people read them from linters: one `file:line:col: CODE message` line
//! each (the shape editors and CI annotate), or a JSON document with each rule's why,
//! fix, lesson link and PyTorch version.

use serde::Serialize;

use super::{Finding, LintError};

/// One finding with its rule spelled out, as JSON and the web page show it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Explained {
    /// The rule's stable code, e.g. `GL101`.
    pub code: &'static str,
    /// The rule's short name.
    pub name: &'static str,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What was found at this place.
    pub message: String,
    /// Why it matters.
    pub why: &'static str,
    /// What to write instead.
    pub fix: &'static str,
    /// The lesson section that explains it (a path on this site).
    pub lesson_url: String,
    /// The live experiment that shows its cost (a path on this site), if one does.
    pub experiment_url: Option<String>,
    /// The experiment's name, if one does.
    pub experiment: Option<&'static str>,
    /// For a deprecated or version-dependent API: the PyTorch version, in words.
    pub changed_in: Option<&'static str>,
    /// The primary source the why was checked against, with its version.
    pub source: &'static str,
    /// What the experiment measured on this server's GPU, when the server has a recent
    /// measurement (filled in by the web layer; never estimated).
    pub measured: Option<String>,
}

impl Explained {
    /// `finding` with its rule.
    pub fn new(finding: &Finding) -> Self {
        let rule = finding.rule();
        Self {
            code: rule.code,
            name: rule.name,
            line: finding.line,
            column: finding.column,
            message: finding.message.clone(),
            why: rule.why,
            fix: rule.fix,
            lesson_url: rule.lesson_url(),
            experiment_url: rule.experiment.as_ref().map(|e| e.url()),
            experiment: rule.experiment.as_ref().map(|e| e.name),
            changed_in: rule.changed_in,
            source: rule.source,
            measured: None,
        }
    }
}

/// `file:line:col: CODE message` lines, one per finding.
pub fn lines(file: &str, findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let version = f
                .rule()
                .changed_in
                .map(|v| format!(" ({v})"))
                .unwrap_or_default();
            format!(
                "{file}:{}:{}: {} {}{version}\n",
                f.line, f.column, f.code, f.message
            )
        })
        .collect()
}

/// The line for a script that could not be checked.
pub fn error_line(file: &str, error: &LintError) -> String {
    match error {
        LintError::Syntax {
            line,
            column,
            message,
        } => format!("{file}:{line}:{column}: E999 syntax error: {message}\n"),
        other => format!("{file}: {other}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_file_place_code_and_version() {
        let source = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n";
        let findings = super::super::check(source).unwrap();
        let text = lines("train.py", &findings);
        assert!(
            text.starts_with("train.py:2:6: GL401 `torch.cuda.amp.autocast` is deprecated"),
            "{text}"
        );
        assert!(text.contains("PyTorch 2.4"), "{text}");
        let explained = Explained::new(&findings[0]);
        assert_eq!(
            explained.lesson_url,
            "/lessons/mixed-precision#autocast-16-bit-where-it-is-safe"
        );
    }

    #[test]
    fn a_syntax_error_line_has_the_place() {
        let error = super::super::check("def f(:\n").unwrap_err();
        assert!(
            error_line("a.py", &error).starts_with("a.py:1:"),
            "{error:?}"
        );
    }
}

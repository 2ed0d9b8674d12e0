//! Findings as people read them from linters: one `file:line:col: CODE message` line
//! each (the shape editors and CI annotate), a JSON document with each rule's why,
//! fix, lesson link and PyTorch version, or GitHub Actions workflow commands
//! (`::warning file=…,line=…::…`) that annotate a pull request's lines. SARIF, for code
//! scanning, is [`super::sarif`].

use serde::Serialize;

use super::{Finding, LintError};

/// One file's outcome in a run of `gpulab lint`.
#[derive(Debug)]
pub struct Checked {
    /// The path as given.
    pub file: String,
    /// Its findings, or why it could not be checked.
    pub outcome: Result<Vec<Finding>, Unchecked>,
}

/// Why a file could not be checked, and where, when a place is known.
#[derive(Debug)]
pub struct Unchecked {
    /// What went wrong, in a sentence.
    pub message: String,
    /// 1-based line and column, for a syntax error.
    pub place: Option<(usize, usize)>,
}

impl From<LintError> for Unchecked {
    fn from(error: LintError) -> Self {
        match error {
            LintError::Syntax {
                line,
                column,
                message,
            } => Self {
                message: format!("syntax error: {message}"),
                place: Some((line, column)),
            },
            other => Self {
                message: other.to_string(),
                place: None,
            },
        }
    }
}

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

/// One GitHub Actions `::warning` command per finding, written as the Actions
/// toolkit's `core.warning(message, {title, file, startLine, startColumn})` writes it
/// (properties in its order; `%`, CR and LF escaped in the message, also `:` and `,` in
/// properties): `tests/e2e/github-annotations.mjs` compares the two byte for byte.
pub fn github(file: &str, findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| {
            let rule = f.rule();
            format!(
                "::warning title={},file={},line={},col={}::{}\n",
                escape_property(&format!("{} {}", f.code, rule.name)),
                escape_property(file),
                f.line,
                f.column,
                escape_data(&format!("{} ({})", f.message, rule.lesson_url()))
            )
        })
        .collect()
}

/// The GitHub Actions `::error` command for a script that could not be checked.
pub fn github_error(file: &str, error: &str, place: Option<(usize, usize)>) -> String {
    let place = place
        .map(|(line, column)| format!(",line={line},col={column}"))
        .unwrap_or_default();
    format!(
        "::error title={},file={}{place}::{}\n",
        escape_property("gpulab: could not check"),
        escape_property(file),
        escape_data(error)
    )
}

/// A workflow command's message (`escapeData` in the Actions toolkit).
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value (`escapeProperty` in the Actions toolkit).
pub fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
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
    fn github_commands_escape_what_would_end_them() {
        let findings =
            super::super::check("import torch\nwith torch.cuda.amp.autocast():\n    pass\n")
                .unwrap();
        let text = github("dir,with:odd%name.py", &findings);
        assert!(
            text.starts_with("::warning title=GL401 deprecated-cuda-amp-autocast,file=dir%2Cwith%3Aodd%25name.py,line=2,col=6::"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1);
        assert_eq!(escape_data("50%\r\nnext"), "50%25%0D%0Anext");
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

//! The script doctor: reads a learner's own PyTorch training script — never runs it —
//! and finds the pitfalls the course teaches, each at its line with the lesson section
//! that explains it and, where one exists, the live experiment that measures its cost.
//!
//! The script is parsed by tree-sitter's Python grammar ([`parse`]); a syntax error is
//! reported with its line and nothing else is guessed. [`context`] answers *where* a
//! call sits — inside a training loop (a loop whose body calls `.backward()`), under
//! `torch.no_grad()`, behind a periodic `if step % N == 0` — so the rules in [`rules`]
//! do not cry wolf at a sync that runs once at the end or every hundredth step.
//! [`catalog`] is the one list of rules (code, why, fix, lesson link, PyTorch version
//! where an API changed); [`report`] prints findings as `file:line:col: CODE message`.
//! Pure functions of the source text: the web page, `POST /api/lint` and `gpulab lint`
//! all call [`check_with`]. Around the rules, the habits of the linters people already
//! use: [`noqa`] comments silence a finding with a reason, [`config`] chooses rules
//! (`--select`, `--ignore`, `[tool.gpulab]` in `pyproject.toml`), [`source`] reads a
//! file in the encoding it declares (PEP 263), and [`report`] and [`sarif`] print text,
//! JSON, GitHub annotations and SARIF.

pub mod calls;
pub mod catalog;
pub mod config;
pub mod context;
pub mod flow;
pub mod noqa;
pub mod parse;
pub mod report;
pub mod rules;
pub mod sarif;
pub mod source;

use std::time::Duration;

pub use catalog::{RULES, Rule};
pub use config::Selection;
use parse::Script;

/// Largest script accepted, in bytes (a long training script is 20–60 KB).
pub const MAX_SOURCE_BYTES: usize = 200 * 1024;

/// Longest the parser may take on one script before it gives up.
pub const PARSE_BUDGET: Duration = Duration::from_secs(2);

/// One pitfall found at one place.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// The rule's stable code, e.g. `GL101`.
    pub code: &'static str,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What was found here, in a sentence.
    pub message: String,
}

impl Finding {
    /// The rule this finding belongs to.
    pub fn rule(&self) -> &'static Rule {
        catalog::rule(self.code)
    }
}

/// Why a script could not be checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LintError {
    /// Larger than [`MAX_SOURCE_BYTES`].
    #[error("the script is {0} bytes; the checker reads scripts of up to {MAX_SOURCE_BYTES} bytes")]
    TooLarge(usize),
    /// Not Python: the first place the parser could not read.
    #[error("line {line}, column {column}: {message}; nothing else was checked")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What the parser found there.
        message: String,
    },
    /// The parser ran past [`PARSE_BUDGET`].
    #[error("the script took too long to parse (over {} s); nothing was checked", PARSE_BUDGET.as_secs())]
    Timeout,
}

/// Every finding of every rule in `source`, in line order, less those its `noqa`
/// comments silence.
pub fn check(source: &str) -> Result<Vec<Finding>, LintError> {
    check_with(source, &Selection::default())
}

/// The findings of the `selected` rules in `source`, in line order, less those its
/// `noqa` comments silence.
pub fn check_with(source: &str, selected: &Selection) -> Result<Vec<Finding>, LintError> {
    if source.len() > MAX_SOURCE_BYTES {
        return Err(LintError::TooLarge(source.len()));
    }
    let script = Script::parse(source, PARSE_BUDGET)?;
    let silenced = noqa::Noqa::read(&script);
    let mut findings = rules::run(&flow::Flow::new(&script));
    findings.retain(|f| selected.enabled(f.code) && !silenced.silences(f));
    findings.sort_by(|a, b| (a.line, a.column, a.code).cmp(&(b.line, b.column, b.code)));
    findings.dedup_by(|a, b| a.line == b.line && a.code == b.code);
    Ok(findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_is_reported_with_its_line_and_nothing_else() {
        let source = "import torch\nfor x in loader:\n    loss.item()\ndef broken(:\n    pass\n";
        match check(source) {
            Err(LintError::Syntax { line, .. }) => assert_eq!(line, 4),
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn noqa_silences_a_line_or_the_file_and_selection_chooses_rules() {
        let source = "import torch\nassert torch.cuda.is_available()\nfor x, y in loader:\n    loss = crit(model(x.cuda()), y)\n    loss.backward()\n    opt.step()\n    opt.zero_grad()\n    print(loss.item())  # noqa: GL101 every step on purpose\n    seen.append(y.cpu())\n";
        let found = check(source).unwrap();
        assert_eq!(
            found.iter().map(|f| f.line).collect::<Vec<_>>(),
            [9],
            "{found:?}"
        );
        let string = source.replace("  # noqa: GL101 every step on purpose", "  ; s = '# noqa'");
        assert_eq!(
            check(&string).unwrap().len(),
            2,
            "a noqa in a string is not a comment"
        );
        let other_code = source.replace("noqa: GL101", "noqa: GL104");
        assert_eq!(check(&other_code).unwrap().len(), 2);
        let file_wide = format!("# gpulab: noqa: GL101\n{source}");
        assert!(check(&file_wide).unwrap().is_empty());
        let syncs_off = Selection::new(Vec::new(), vec!["GL1".into()]).unwrap();
        assert!(check_with(source, &syncs_off).unwrap().is_empty());
    }

    #[test]
    fn an_oversized_script_is_refused_before_parsing() {
        let source = "x = 1\n".repeat(MAX_SOURCE_BYTES / 6 + 1);
        assert!(matches!(check(&source), Err(LintError::TooLarge(n)) if n > MAX_SOURCE_BYTES));
    }

    #[test]
    fn findings_come_in_line_order_once_per_line_and_rule() {
        let source = "import torch\nfor x, y in loader:\n    loss = crit(model(x.cuda()), y)\n    loss.backward()\n    print(loss.cpu().numpy())\n    opt.step()\n    opt.zero_grad()\n";
        let found = check(source).unwrap();
        assert_eq!(
            found.iter().filter(|f| f.code == "GL101").count(),
            1,
            "{found:?}"
        );
        assert!(found.windows(2).all(|w| w[0].line <= w[1].line));
    }
}

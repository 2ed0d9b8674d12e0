//! Silencing a finding on purpose, as ruff and flake8 users already do it: a
//! `# noqa: GL101` comment on the finding's line silences that code there (several
//! codes separated by commas or spaces; any words after them are the reason, e.g.
//! `# noqa: GL101 logging every step is what this benchmark measures`), and a bare
//! `# noqa` silences every code on the line. `# gpulab: noqa: GL203` anywhere in the
//! file silences a code in the whole file, and `# gpulab: noqa` alone the whole file.
//! Only real comments count (a `# noqa` inside a string does not), read from the
//! syntax tree.

use std::collections::HashMap;

use super::Finding;
use super::parse::Script;

/// What a line's or the file's `noqa` silences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Silenced {
    /// Every code.
    All,
    /// These codes.
    Codes(Vec<String>),
}

impl Silenced {
    fn covers(&self, code: &str) -> bool {
        match self {
            Self::All => true,
            Self::Codes(codes) => codes.iter().any(|c| c == code),
        }
    }

    fn merge(&mut self, other: Self) {
        match (&mut *self, other) {
            (Self::All, _) => {}
            (_, Self::All) => *self = Self::All,
            (Self::Codes(mine), Self::Codes(theirs)) => mine.extend(theirs),
        }
    }
}

/// Every `noqa` comment of a script.
#[derive(Debug, Default)]
pub struct Noqa {
    /// By 1-based line.
    lines: HashMap<usize, Silenced>,
    /// For the whole file.
    file: Option<Silenced>,
}

impl Noqa {
    /// Reads the comments of `script`.
    pub fn read(script: &Script) -> Self {
        let mut noqa = Self::default();
        let comments = script.nodes().into_iter().filter(|n| n.kind() == "comment");
        // A comment may hold several (`# type: ignore  # noqa: GL101`).
        let parts = comments.flat_map(|c| {
            let line = c.start_position().row + 1;
            script
                .text(c)
                .split('#')
                .map(move |part| (line, part.trim()))
        });
        for (line, text) in parts {
            if let Some(rest) = strip_prefix_ci(text, "gpulab:") {
                if let Some(silenced) = parse(rest.trim()) {
                    match &mut noqa.file {
                        Some(file) => file.merge(silenced),
                        None => noqa.file = Some(silenced),
                    }
                }
            } else if let Some(silenced) = parse(text) {
                match noqa.lines.get_mut(&line) {
                    Some(existing) => existing.merge(silenced),
                    None => {
                        noqa.lines.insert(line, silenced);
                    }
                }
            }
        }
        noqa
    }

    /// Whether `finding` is silenced.
    pub fn silences(&self, finding: &Finding) -> bool {
        self.file.as_ref().is_some_and(|f| f.covers(finding.code))
            || self
                .lines
                .get(&finding.line)
                .is_some_and(|l| l.covers(finding.code))
    }
}

/// `noqa`, `noqa: GL101, GL102 reason…` or `NOQA:GL101` → what it silences; anything
/// else → `None`. A `noqa:` followed by no code (only words) silences nothing, so a
/// typo never silences a whole line.
fn parse(text: &str) -> Option<Silenced> {
    let rest = strip_prefix_ci(text, "noqa")?;
    if rest.trim().is_empty() {
        return Some(Silenced::All);
    }
    let rest = rest.trim_start().strip_prefix(':')?;
    let codes: Vec<String> = rest
        .split([',', ' ', '\t'])
        .filter(|w| !w.is_empty())
        .take_while(|w| is_code(w))
        .map(str::to_ascii_uppercase)
        .collect();
    (!codes.is_empty()).then_some(Silenced::Codes(codes))
}

/// Whether `word` looks like a rule code: letters, then digits (`GL101`, `E731`).
fn is_code(word: &str) -> bool {
    let letters = word.chars().take_while(char::is_ascii_alphabetic).count();
    letters > 0 && letters < word.len() && word[letters..].chars().all(|c| c.is_ascii_digit())
}

/// `text` without `prefix`, compared without regard to case.
fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_noqa_comment_names_codes_and_a_reason() {
        assert_eq!(parse("noqa"), Some(Silenced::All));
        assert_eq!(
            parse("noqa: GL101, gl102 logging every step on purpose"),
            Some(Silenced::Codes(vec!["GL101".into(), "GL102".into()]))
        );
        assert_eq!(
            parse("NOQA:GL203"),
            Some(Silenced::Codes(vec!["GL203".into()]))
        );
        assert_eq!(
            parse("noqa: because I said so"),
            None,
            "no code, no silence"
        );
        assert_eq!(parse("not a noqa"), None);
    }

    #[test]
    fn codes_are_letters_then_digits() {
        assert!(is_code("GL101") && is_code("E731"));
        assert!(!is_code("GL") && !is_code("101") && !is_code("GL10x"));
    }
}

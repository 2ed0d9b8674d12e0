//! Lesson front matter: the TOML block between `+++` lines at the top of `lesson.md`.
//! It carries what the home page and the lesson header show; the body follows it.

use serde::Deserialize;

use super::problem::{LineIndex, Problem};

/// What a lesson says about itself.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontMatter {
    /// The lesson title, shown as its `<h1>`.
    pub title: String,
    /// One sentence for the course home page.
    pub summary: String,
    /// Honest reading time in minutes.
    pub minutes: u32,
    /// What the student will be able to do afterwards.
    pub objectives: Vec<String>,
}

/// A lesson file split into its parsed front matter and its Markdown body.
pub struct Split<'a> {
    /// The parsed front matter.
    pub front: FrontMatter,
    /// The Markdown after the closing `+++`.
    pub body: &'a str,
    /// The file line on which `body` starts.
    pub body_first_line: usize,
}

const FENCE: &str = "+++";

/// Splits and parses a lesson file; `file` names it in problems.
pub fn split<'a>(file: &str, text: &'a str) -> Result<Split<'a>, Problem> {
    let text_no_bom = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text_no_bom.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some(FENCE) {
        return Err(Problem::new(
            file,
            1,
            "a lesson must start with a `+++` line opening its TOML front matter",
        ));
    }
    let front_start = FENCE.len() + text_no_bom[FENCE.len()..].find('\n').map_or(0, |i| i + 1);
    let mut offset = front_start;
    let mut closing = None;
    for (n, line) in lines.enumerate() {
        if line.trim_end() == FENCE {
            closing = Some((offset, offset + line.len(), n + 2));
            break;
        }
        offset += line.len();
    }
    let Some((front_end, body_start, closing_line)) = closing else {
        return Err(Problem::new(
            file,
            1,
            "the front matter opened with `+++` is never closed by a second `+++` line",
        ));
    };
    let front_text = &text_no_bom[front_start..front_end];
    let front: FrontMatter = toml::from_str(front_text).map_err(|e| {
        let line = e
            .span()
            .map_or(2, |span| LineIndex::new(front_text, 2).line(span.start));
        Problem::new(
            file,
            line,
            format!("front matter: {}", e.message().trim_end()),
        )
    })?;
    validate(file, &front)?;
    Ok(Split {
        front,
        body: &text_no_bom[body_start..],
        body_first_line: closing_line + 1,
    })
}

fn validate(file: &str, front: &FrontMatter) -> Result<(), Problem> {
    let problem = |message: &str| Err(Problem::new(file, 2, format!("front matter: {message}")));
    if front.title.trim().is_empty() {
        return problem("`title` is empty");
    }
    if front.summary.trim().is_empty() {
        return problem("`summary` is empty");
    }
    if !(1..=90).contains(&front.minutes) {
        return problem("`minutes` must be between 1 and 90");
    }
    if front.objectives.is_empty() || front.objectives.iter().any(|o| o.trim().is_empty()) {
        return problem("`objectives` must list at least one non-empty objective");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str =
        "+++\ntitle = \"T\"\nsummary = \"S\"\nminutes = 12\nobjectives = [\"o\"]\n+++\n\nBody\n";

    #[test]
    fn splits_front_matter_and_body() {
        let split = split("l.md", GOOD).unwrap();
        assert_eq!(split.front.title, "T");
        assert_eq!(split.front.minutes, 12);
        assert_eq!(split.body, "\nBody\n");
        assert_eq!(split.body_first_line, 7);
    }

    #[test]
    fn broken_toml_points_at_its_line() {
        let text = "+++\ntitle = \"T\"\nsummary = S\nminutes = 1\nobjectives = [\"o\"]\n+++\n";
        let problem = split("l.md", text).err().unwrap();
        assert_eq!(problem.line, 3, "{problem}");
        assert!(problem.message.starts_with("front matter:"), "{problem}");
    }

    #[test]
    fn unclosed_and_missing_front_matter_are_errors() {
        assert!(split("l.md", "no front matter").is_err());
        assert!(
            split("l.md", "+++\ntitle = \"T\"\n")
                .err()
                .unwrap()
                .message
                .contains("never closed")
        );
    }

    #[test]
    fn unknown_keys_and_empty_fields_are_rejected() {
        let extra = GOOD.replace("minutes = 12", "minutes = 12\nauthor = \"x\"");
        assert!(split("l.md", &extra).is_err());
        let empty = GOOD.replace("title = \"T\"", "title = \" \"");
        assert!(
            split("l.md", &empty)
                .err()
                .unwrap()
                .message
                .contains("title")
        );
    }
}

//! Content problems: what `gpulab check` prints and what stops the server from starting.
//! Each problem points at a file and a 1-based line so an author can jump straight to it.

use std::fmt;

/// One thing wrong with the course content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Path of the file, as the author would type it (`content/01-why-gpus/lesson.md`).
    pub file: String,
    /// 1-based line in that file.
    pub line: usize,
    /// What is wrong, in words an author can act on.
    pub message: String,
}

impl Problem {
    /// A problem at `file:line`.
    pub fn new(file: impl Into<String>, line: usize, message: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// Every problem found in one pass over the content; loading fails if there is any.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the course content has {} problem(s):\n{}", .0.len(), list(.0))]
pub struct Problems(pub Vec<Problem>);

fn list(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Maps byte offsets in a text to 1-based line numbers.
pub struct LineIndex {
    starts: Vec<usize>,
    first_line: usize,
}

impl LineIndex {
    /// Index `text`, whose first line is line `first_line` of its file.
    pub fn new(text: &str, first_line: usize) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { starts, first_line }
    }

    /// The file line holding byte `offset` of the text.
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset) - 1 + self.first_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_lines() {
        let index = LineIndex::new("ab\ncd\n\nef", 5);
        assert_eq!(index.line(0), 5);
        assert_eq!(index.line(2), 5);
        assert_eq!(index.line(3), 6);
        assert_eq!(index.line(6), 7);
        assert_eq!(index.line(7), 8);
    }

    #[test]
    fn problems_print_as_file_line_message() {
        let p = Problem::new("content/a/lesson.md", 3, "bad");
        assert_eq!(p.to_string(), "content/a/lesson.md:3: bad");
    }
}

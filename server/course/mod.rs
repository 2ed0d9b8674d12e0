//! The course: lessons loaded from `content/`, rendered once at start-up and kept in
//! memory. [`Course::load`] runs the whole preprocessor chain and the cross-lesson link
//! check; any problem stops the load, so a broken lesson can never reach a student.

pub mod directives;
mod fallbacks;
pub mod frontmatter;
pub mod grading;
pub mod highlight;
pub mod html;
pub mod learner_runs;
pub mod markdown;
pub mod math;
pub mod notebook;
pub mod notebooks;
pub mod numeric;
pub mod outline;
pub mod predictions;
pub mod problem;
pub mod quiz;
pub mod reference_runs;
pub mod search;
pub mod source;
pub mod sources;
pub mod submission;
pub mod units;

use serde::Deserialize;

pub use fallbacks::{amdahl_speedup, bytes_per_param, copy_seconds, rounds};
use highlight::Highlighter;
use markdown::{Renderer, TocEntry};
use problem::{LineIndex, Problem, Problems};
use quiz::Quiz;
pub use source::ContentSource;

/// The course index file at the content root.
pub const INDEX_FILE: &str = "course.toml";

/// One lesson, rendered.
#[derive(Debug, Clone)]
pub struct Lesson {
    /// URL slug: the lesson lives at `/lessons/<slug>`.
    pub slug: String,
    /// 1-based position in the course.
    pub number: usize,
    /// Title from the front matter.
    pub title: String,
    /// One-sentence summary for the home page.
    pub summary: String,
    /// Reading time in minutes.
    pub minutes: u32,
    /// Learning objectives.
    pub objectives: Vec<String>,
    /// The rendered body.
    pub html: String,
    /// `##`/`###` headings for the table of contents.
    pub toc: Vec<TocEntry>,
    /// Directives placed in the lesson (`widget amdahl`, …).
    pub directives: Vec<String>,
    /// Formulas rendered to MathML.
    pub math_count: usize,
    /// Highlighted code blocks.
    pub code_count: usize,
    /// Words of prose.
    pub words: usize,
    /// Sections with their text and the code blocks, for search and downloads.
    pub outline: outline::Outline,
}

/// The whole course, in order.
#[derive(Debug, Clone)]
pub struct Course {
    /// Course title from `course.toml`.
    pub title: String,
    /// Lessons in course order.
    pub lessons: Vec<Lesson>,
    /// One quiz per lesson (id = lesson slug), then the final exam (id `final-exam`).
    pub quizzes: Vec<Quiz>,
    /// Every section and question, indexed for search.
    pub search: std::sync::Arc<search::SearchIndex>,
    /// Reference GPU results (`reference-runs/*.json`) shown beside CPU runs.
    pub references: std::sync::Arc<Vec<reference_runs::ReferenceFile>>,
    /// What each live experiment asks before it runs (`predictions.toml`).
    pub predictions: std::sync::Arc<predictions::Questions>,
    /// Notebooks served for download (`notebooks/*.ipynb`).
    pub notebooks: std::sync::Arc<Vec<notebooks::Notebook>>,
}

/// The id (and URL segment) of the course's final exam.
pub const FINAL_EXAM_ID: &str = "final-exam";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Index {
    title: String,
    /// Folder holding the final exam's `quiz.toml`.
    final_exam: Option<toml::Spanned<String>>,
    #[serde(rename = "lesson")]
    lessons: Vec<IndexEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IndexEntry {
    slug: toml::Spanned<String>,
    dir: toml::Spanned<String>,
}

impl Course {
    /// Loads, renders and checks every lesson of `source`.
    pub fn load(source: &ContentSource) -> Result<Self, Problems> {
        let mut problems = Vec::new();
        let index_path = source.display_path(INDEX_FILE);
        let fail = |line, message: String| Problems(vec![Problem::new(&index_path, line, message)]);
        let index_text = match source.read(INDEX_FILE) {
            Ok(Some(text)) => text,
            Ok(None) => {
                return Err(fail(
                    1,
                    format!("{INDEX_FILE} not found: it lists the lessons in order"),
                ));
            }
            Err(e) => return Err(fail(1, e)),
        };
        let index_lines = LineIndex::new(&index_text, 1);
        let index: Index = toml::from_str(&index_text).map_err(|e| {
            let line = e.span().map_or(1, |s| index_lines.line(s.start));
            fail(line, e.message().trim_end().to_string())
        })?;
        if index.lessons.is_empty() {
            return Err(fail(1, "the course lists no `[[lesson]]`".into()));
        }

        let highlighter = Highlighter::new();
        let renderer = Renderer::new(&highlighter);
        let mut lessons = Vec::new();
        let mut anchors = Vec::new();
        let mut links = Vec::new();
        let mut quizzes = Vec::new();
        for (i, entry) in index.lessons.iter().enumerate() {
            let entry_line = index_lines.line(entry.slug.span().start);
            let slug = entry.slug.get_ref();
            if !is_slug(slug) {
                problems.push(Problem::new(
                    &index_path,
                    entry_line,
                    format!("slug `{slug}` must be lower-case letters, digits and hyphens"),
                ));
            }
            if lessons.iter().any(|l: &Lesson| &l.slug == slug) {
                problems.push(Problem::new(
                    &index_path,
                    entry_line,
                    format!("slug `{slug}` is listed twice"),
                ));
            }
            let dir = entry.dir.get_ref();
            let relative = format!("{dir}/lesson.md");
            let file = source.display_path(&relative);
            let text = match source.read(&relative) {
                Ok(Some(text)) => text,
                Ok(None) => {
                    let line = index_lines.line(entry.dir.span().start);
                    problems.push(Problem::new(
                        &index_path,
                        line,
                        format!("lesson file {file} not found"),
                    ));
                    continue;
                }
                Err(e) => {
                    problems.push(Problem::new(&file, 1, e));
                    continue;
                }
            };
            let split = match frontmatter::split(&file, &text) {
                Ok(split) => split,
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            };
            let rendered = renderer.render(&file, split.body, split.body_first_line, &mut problems);
            sources::check(&file, split.body, split.body_first_line, &mut problems);
            units::check(&file, split.body, split.body_first_line, &mut problems);
            anchors.push((slug.clone(), rendered.anchors));
            links.push((file, rendered.links));
            let quiz_line = index_lines.line(entry.dir.span().start);
            if let Some(quiz) = load_quiz(
                source,
                dir,
                slug,
                &split.front.title,
                &index_path,
                quiz_line,
                &mut problems,
            ) {
                quizzes.push(quiz);
            }
            let front = split.front;
            lessons.push(Lesson {
                slug: slug.clone(),
                number: i + 1,
                title: front.title,
                summary: front.summary,
                minutes: front.minutes,
                objectives: front.objectives,
                html: rendered.html,
                toc: rendered.toc,
                directives: rendered.directives,
                math_count: rendered.math_count,
                code_count: rendered.code_count,
                words: rendered.words,
                outline: rendered.outline,
            });
        }
        for (lesson_index, (file, lesson_links)) in links.iter().enumerate() {
            let own_slug = &anchors[lesson_index].0;
            for link in lesson_links {
                let checked = match link.dest.strip_prefix("/notebooks/") {
                    Some(name) => notebooks::check_link(source, name),
                    None => check_link(&link.dest, own_slug, &anchors),
                };
                if let Err(message) = checked {
                    problems.push(Problem::new(file, link.line, message));
                }
            }
        }
        match &index.final_exam {
            Some(dir) => {
                let line = index_lines.line(dir.span().start);
                if let Some(exam) = load_quiz(
                    source,
                    dir.get_ref(),
                    FINAL_EXAM_ID,
                    "Final exam",
                    &index_path,
                    line,
                    &mut problems,
                ) {
                    quizzes.push(exam);
                }
            }
            None => problems.push(Problem::new(
                &index_path,
                1,
                "`final_exam` is missing: name the folder holding the final exam's quiz.toml",
            )),
        }
        let references = load_references(source, &mut problems);
        let notebooks = notebooks::load(source, &mut problems);
        let predictions = match source.read(predictions::FILE) {
            Ok(Some(text)) => {
                let file = source.display_path(predictions::FILE);
                predictions::load(&file, &text, &anchors, &mut problems)
            }
            // A course without the file asks nothing before its experiments run.
            Ok(None) => predictions::Questions::new(),
            Err(e) => {
                problems.push(Problem::new(source.display_path(predictions::FILE), 1, e));
                predictions::Questions::new()
            }
        };
        if problems.is_empty() {
            let mut course = Self {
                title: index.title,
                lessons,
                quizzes,
                search: std::sync::Arc::default(),
                references: std::sync::Arc::new(references),
                predictions: std::sync::Arc::new(predictions),
                notebooks: std::sync::Arc::new(notebooks),
            };
            course.search = std::sync::Arc::new(search::SearchIndex::build(&course));
            course.link_questions_to_sections();
            Ok(course)
        } else {
            Err(Problems(problems))
        }
    }

    /// The reference files that name `experiment`, for its panel's overlay.
    pub fn references_for(&self, experiment: &str) -> Vec<&reference_runs::ReferenceFile> {
        self.references
            .iter()
            .filter(|r| {
                r.figures
                    .iter()
                    .any(|f| f.experiments.iter().any(|e| e == experiment))
                    || r.recorded.as_ref().is_some_and(|run| {
                        run.experiments
                            .iter()
                            .any(|e| e.get("name").and_then(|n| n.as_str()) == Some(experiment))
                    })
            })
            .collect()
    }

    /// Points every question at the lesson section that teaches it: within its own
    /// lesson for a lesson quiz, anywhere in the course for the final exam.
    fn link_questions_to_sections(&mut self) {
        let index = std::sync::Arc::clone(&self.search);
        for quiz in &mut self.quizzes {
            let slug = self
                .lessons
                .iter()
                .any(|l| l.slug == quiz.id)
                .then(|| quiz.id.clone());
            for q in &mut quiz.questions {
                let text = format!("{} {} {}", q.prompt, q.expected_text(), q.explanation);
                q.teaches = index.best_section(&text, slug.as_deref());
            }
        }
    }

    /// The quiz with `id` (a lesson slug or `final-exam`).
    pub fn quiz(&self, id: &str) -> Option<&Quiz> {
        self.quizzes.iter().find(|q| q.id == id)
    }

    /// The lesson at `slug`, with its neighbours.
    pub fn lesson(&self, slug: &str) -> Option<(&Lesson, Option<&Lesson>, Option<&Lesson>)> {
        let i = self.lessons.iter().position(|l| l.slug == slug)?;
        let prev = i.checked_sub(1).map(|p| &self.lessons[p]);
        Some((&self.lessons[i], prev, self.lessons.get(i + 1)))
    }
}

/// Reads and checks `<dir>/quiz.toml`; a missing file is reported at `index_line`.
fn load_quiz(
    source: &ContentSource,
    dir: &str,
    id: &str,
    title: &str,
    index_path: &str,
    index_line: usize,
    problems: &mut Vec<Problem>,
) -> Option<Quiz> {
    let relative = format!("{dir}/quiz.toml");
    let file = source.display_path(&relative);
    match source.read(&relative) {
        Ok(Some(text)) => quiz::parse(id, title, &file, &text)
            .map_err(|mut p| problems.append(&mut p))
            .ok(),
        Ok(None) => {
            problems.push(Problem::new(
                index_path,
                index_line,
                format!("quiz file {file} not found: every lesson and the final exam need one"),
            ));
            None
        }
        Err(e) => {
            problems.push(Problem::new(&file, 1, e));
            None
        }
    }
}

fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Site pages a lesson may link to besides lessons.
const SITE_PAGES: &[&str] = &["/", "/about"];

/// Checks one link target against the course's lessons and headings.
fn check_link(
    dest: &str,
    own_slug: &str,
    anchors: &[(String, std::collections::HashSet<String>)],
) -> Result<(), String> {
    let has_scheme = dest.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    });
    if has_scheme {
        return Ok(());
    }
    let (path, fragment) = match dest.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (dest, None),
    };
    let target_slug = if path.is_empty() {
        own_slug
    } else if let Some(slug) = path.strip_prefix("/lessons/") {
        slug.trim_end_matches('/')
    } else if SITE_PAGES.contains(&path) && fragment.is_none() {
        return Ok(());
    } else {
        return Err(format!(
            "dangling link `{dest}`: internal links go to /lessons/<slug>, /lessons/<slug>#heading or #heading"
        ));
    };
    let Some((_, ids)) = anchors.iter().find(|(slug, _)| slug == target_slug) else {
        return Err(format!(
            "dangling link `{dest}`: no lesson has the slug `{target_slug}`"
        ));
    };
    match fragment {
        Some(id) if !ids.contains(id) => Err(format!(
            "dangling link `{dest}`: lesson `{target_slug}` has no heading with id `{id}`"
        )),
        _ => Ok(()),
    }
}

/// Reads and validates every `reference-runs/*.json`, adding a problem per fault.
fn load_references(
    source: &ContentSource,
    problems: &mut Vec<Problem>,
) -> Vec<reference_runs::ReferenceFile> {
    let known: Vec<&str> = crate::experiments::REGISTRY
        .iter()
        .map(|e| e.name())
        .collect();
    let mut out = Vec::new();
    for relative in source.list(reference_runs::DIR, ".json") {
        let file = source.display_path(&relative);
        let text = match source.read(&relative) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(e) => {
                problems.push(Problem::new(&file, 1, e));
                continue;
            }
        };
        match serde_json::from_str::<reference_runs::ReferenceFile>(&text) {
            Err(e) => problems.push(Problem::new(&file, e.line().max(1), e.to_string())),
            Ok(reference) => {
                let found = reference_runs::validate(&reference, &known);
                if found.is_empty() {
                    out.push(reference);
                }
                problems.extend(found.into_iter().map(|m| Problem::new(&file, 1, m)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn links_are_checked_against_slugs_and_headings() {
        let anchors = vec![
            ("a".to_string(), HashSet::from(["intro".to_string()])),
            ("b".to_string(), HashSet::new()),
        ];
        assert!(check_link("https://pytorch.org", "a", &anchors).is_ok());
        assert!(check_link("/lessons/b", "a", &anchors).is_ok());
        assert!(check_link("/lessons/a#intro", "b", &anchors).is_ok());
        assert!(check_link("#intro", "a", &anchors).is_ok());
        assert!(check_link("/about", "a", &anchors).is_ok());
        assert!(
            check_link("#intro", "b", &anchors)
                .unwrap_err()
                .contains("no heading")
        );
        assert!(
            check_link("/lessons/c", "a", &anchors)
                .unwrap_err()
                .contains("no lesson")
        );
        assert!(
            check_link("../b/lesson.md", "a", &anchors)
                .unwrap_err()
                .contains("dangling")
        );
    }
}

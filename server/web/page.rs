//! Typed page structs, one per HTML page, each rendered by an askama template under
//! `web/templates/` that extends `base.html`. Templates escape everything by default;
//! only lesson HTML (rendered by our own pipeline at start-up) is marked safe.

use askama::Template;

use crate::course::quiz::{Graded, Quiz};
use crate::course::{Course, Lesson};
use crate::db::gradebook::{GradeCell, MissedQuestion};
use crate::db::progress::QuizProgress;
use crate::web::assets::{Assets, SYNTAX_CSS};

/// Every page's stylesheets, in cascade order: the site, code highlighting, the
/// widgets of lessons 1–3 and 4–9, the live-experiment panels and their charts.
const STYLESHEETS: [&str; 6] = [
    "css/site.css",
    SYNTAX_CSS,
    "css/widgets-basics.css",
    "css/widgets-training.css",
    "css/experiments.css",
    "vendor/uplot/uPlot.min.css",
];

/// What the base layout needs on every page.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The course title, shown in the header.
    pub site_title: String,
    /// Stylesheet URLs, in order.
    pub stylesheets: Vec<String>,
}

impl Layout {
    /// A layout whose asset URLs carry content hashes, for pages served from state.
    pub fn new(site_title: &str, assets: &Assets) -> Self {
        Self {
            site_title: site_title.to_string(),
            stylesheets: STYLESHEETS.iter().map(|path| assets.url(path)).collect(),
        }
    }

    /// A layout with plain asset URLs, for error pages rendered without state.
    pub fn plain() -> Self {
        Self {
            site_title: "GPU Lab".to_string(),
            stylesheets: STYLESHEETS
                .iter()
                .map(|path| format!("/static/{path}"))
                .collect(),
        }
    }
}

/// The course home: every lesson with its summary, reading time and the student's state.
#[derive(Template)]
#[template(path = "home.html", config = "web/askama.toml")]
pub struct HomePage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The course.
    pub course: &'a Course,
    /// Total reading minutes, for the header.
    pub total_minutes: u32,
    /// Per lesson, in course order: the student's state in words and as a CSS class.
    pub states: Vec<QuizState>,
    /// The final exam's state.
    pub exam_state: QuizState,
    /// Quizzes passed, out of lessons + final exam.
    pub passed_count: usize,
    /// The student's display name, if chosen.
    pub display_name: Option<String>,
}

/// A student's state on one quiz, for the home page.
pub struct QuizState {
    /// `not-started`, `attempted` or `passed`.
    pub class: &'static str,
    /// Words shown to the student.
    pub label: String,
}

impl QuizState {
    /// The state from the student's best result, if any.
    pub fn from_progress(progress: Option<&QuizProgress>) -> Self {
        match progress {
            None => Self {
                class: "not-started",
                label: "Quiz not started".into(),
            },
            Some(p) if p.passed => Self {
                class: "passed",
                label: format!(
                    "Passed · best {}% · {} attempt{}",
                    p.best_percent,
                    p.attempts,
                    if p.attempts == 1 { "" } else { "s" }
                ),
            },
            Some(p) => Self {
                class: "attempted",
                label: format!(
                    "Attempted · best {}% · {} attempt{}",
                    p.best_percent,
                    p.attempts,
                    if p.attempts == 1 { "" } else { "s" }
                ),
            },
        }
    }
}

/// A quiz as a plain HTML form: questions and options only, never the key.
#[derive(Template)]
#[template(path = "quiz.html", config = "web/askama.toml")]
pub struct QuizPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The quiz.
    pub quiz: &'a Quiz,
    /// Where the form posts.
    pub action: String,
    /// Back to the lesson (or home for the final exam).
    pub back_href: String,
    /// The student's state on this quiz.
    pub state: QuizState,
    /// Script URL for the no-reload enhancement.
    pub script: String,
}

/// The result of one attempt, with every explanation.
#[derive(Template)]
#[template(path = "quiz_result.html", config = "web/askama.toml")]
pub struct QuizResultPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The quiz taken.
    pub quiz: &'a Quiz,
    /// The graded attempt.
    pub graded: &'a Graded,
    /// Retake link.
    pub retake_href: String,
    /// Where to go next: the next lesson, or the course home.
    pub next_href: String,
    /// Label for `next_href`.
    pub next_label: String,
}

/// The instructor's token form.
#[derive(Template)]
#[template(path = "instructor_login.html", config = "web/askama.toml")]
pub struct InstructorLoginPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// Shown after a wrong token.
    pub error: Option<String>,
}

/// The class gradebook.
#[derive(Template)]
#[template(path = "instructor.html", config = "web/askama.toml")]
pub struct InstructorPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// Quiz ids and titles, in course order (columns).
    pub quizzes: Vec<(&'a str, &'a str)>,
    /// One row per student on this page: name and one cell per quiz.
    pub rows: Vec<GradebookRow>,
    /// Students with at least one attempt, on every page.
    pub students: usize,
    /// This page (1-based) and how many there are.
    pub page: usize,
    /// Pages in all.
    pub pages: usize,
    /// Most-missed questions.
    pub missed: Vec<MissedQuestion>,
    /// The experiment queue right now.
    pub queue: crate::engine::queue::QueueStats,
    /// The device experiments run on.
    pub device: String,
    /// Experiment use per student, from the server's own job records.
    pub gpu_use: Vec<GpuUseRow>,
}

/// One student's use of the shared GPU since the server started.
pub struct GpuUseRow {
    /// Display name, or a short form of the id.
    pub name: String,
    /// The queue's figures for this student.
    pub usage: crate::engine::queue::OwnerUsage,
    /// Memory this student's allocator playground holds now, in MiB.
    pub playground_mib: f64,
}

/// One student's row in the gradebook.
pub struct GradebookRow {
    /// Display name, or a short form of the id.
    pub name: String,
    /// One cell per quiz column, `None` when not attempted.
    pub cells: Vec<Option<GradeCell>>,
}

/// One lesson with its table of contents and neighbours.
#[derive(Template)]
#[template(path = "lesson.html", config = "web/askama.toml")]
pub struct LessonPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The lesson shown.
    pub lesson: &'a Lesson,
    /// The lesson before it, if any.
    pub prev: Option<&'a Lesson>,
    /// The lesson after it, if any.
    pub next: Option<&'a Lesson>,
    /// How many lessons the course has.
    pub total: usize,
    /// URL of the script that mounts the lesson's widgets and experiment panels.
    pub script: String,
}

/// How to run GPU Lab and what the server is running on.
#[derive(Template)]
#[template(path = "about.html", config = "web/askama.toml")]
pub struct AboutPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// Lessons in the course.
    pub lesson_count: usize,
    /// The server's version.
    pub version: &'static str,
}

/// The pages that are the same for every student, rendered and encoded once at start-up:
/// every lesson and the about page.
pub struct Prerendered {
    /// Lesson pages by slug.
    pub lessons: std::collections::HashMap<String, std::sync::Arc<super::encoded::Encoded>>,
    /// The about page.
    pub about: std::sync::Arc<super::encoded::Encoded>,
}

impl Prerendered {
    /// Renders every lesson of `course` and the about page with `layout`.
    pub fn render(
        course: &Course,
        layout: &Layout,
        assets: &Assets,
    ) -> Result<Self, askama::Error> {
        use super::encoded::Encoded;
        const HTML: &str = "text/html; charset=utf-8";
        let script = assets.url("js/lesson.js");
        let mut lessons = std::collections::HashMap::new();
        for (i, lesson) in course.lessons.iter().enumerate() {
            let page = LessonPage {
                layout,
                lesson,
                prev: i.checked_sub(1).and_then(|p| course.lessons.get(p)),
                next: course.lessons.get(i + 1),
                total: course.lessons.len(),
                script: script.clone(),
            };
            lessons.insert(
                lesson.slug.clone(),
                Encoded::new(page.render()?.into_bytes(), HTML),
            );
        }
        let about = AboutPage {
            layout,
            lesson_count: course.lessons.len(),
            version: env!("CARGO_PKG_VERSION"),
        };
        Ok(Self {
            lessons,
            about: Encoded::new(about.render()?.into_bytes(), HTML),
        })
    }

    /// Every page, for the start-up warm-up.
    pub fn all(&self) -> impl Iterator<Item = &std::sync::Arc<super::encoded::Encoded>> {
        self.lessons.values().chain(std::iter::once(&self.about))
    }
}

/// A 404 or 500 page.
#[derive(Template)]
#[template(path = "error.html", config = "web/askama.toml")]
pub struct ErrorPage {
    /// Plain layout (error pages render without state).
    pub layout: Layout,
    /// HTTP status code.
    pub status: u16,
    /// Short heading.
    pub heading: String,
    /// What happened and what to do.
    pub detail: String,
}

impl ErrorPage {
    /// An error page with the plain layout.
    pub fn new(status: u16, heading: &str, detail: &str) -> Self {
        Self {
            layout: Layout::plain(),
            status,
            heading: heading.to_string(),
            detail: detail.to_string(),
        }
    }
}

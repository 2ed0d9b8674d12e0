//! Typed page structs, one per HTML page, each rendered by an askama template under
//! `web/templates/` that extends `base.html`. Templates escape everything by default;
//! only lesson HTML (rendered by our own pipeline at start-up) is marked safe.

use std::collections::HashMap;
use std::sync::Arc;

use askama::Template;

use super::encoded::Encoded;
use crate::classroom::learner_flow::{Continue, DeviceStatus};
use crate::course::notebook;
use crate::course::{Course, Lesson};
use crate::db::progress::QuizProgress;
use crate::web::assets::{Assets, SYNTAX_CSS};

/// Every page's stylesheets, in cascade order: the site, the learner's path (quiz
/// marks, search, completion, print), code highlighting, the widgets of lessons 1–3
/// and 4–9, the live-experiment panels and their charts.
const STYLESHEETS: [&str; 7] = [
    "css/site.css",
    "css/learner.css",
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
    /// Whether pages carry the class-round slot (filled by `class-round.js`, which the
    /// home, lesson and quiz scripts import).
    pub class_round: bool,
}

impl Layout {
    /// A layout whose asset URLs carry content hashes, for pages served from state.
    pub fn new(site_title: &str, assets: &Assets) -> Self {
        Self {
            site_title: site_title.to_string(),
            stylesheets: STYLESHEETS.iter().map(|path| assets.url(path)).collect(),
            class_round: true,
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
            class_round: false,
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
    /// Tuning labs passed, out of `labs_total`.
    pub labs_passed: usize,
    /// Tuning labs in the course.
    pub labs_total: usize,
    /// The student's display name, if chosen.
    pub display_name: Option<String>,
    /// Where to pick up.
    pub continue_at: Continue,
    /// What live experiments run on.
    pub device: &'a DeviceStatus,
    /// The display name was just saved (`?saved=name`).
    pub saved: bool,
    /// This student's resume code (`ABCD-EFGH-JKMN`), once asked for.
    pub resume_code: Option<String>,
    /// This browser just took over progress with a resume code (`?resumed=1`).
    pub resumed: bool,
    /// The home page's script ("Continue" prefers a lesson read further on).
    pub script: String,
    /// How close the student's predictions before live experiments came.
    pub calibration: crate::classroom::calibration::Calibration,
}

/// A student's state on one quiz, for the home page and the quiz's status line.
#[derive(Debug, Clone, serde::Serialize)]
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

/// The instructor's token form.
#[derive(Template)]
#[template(path = "instructor_login.html", config = "web/askama.toml")]
pub struct InstructorLoginPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// Shown after a wrong token.
    pub error: Option<String>,
}

/// One lesson with its table of contents, the course's chapters and its neighbours.
#[derive(Template)]
#[template(path = "lesson.html", config = "web/askama.toml")]
pub struct LessonPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The lesson shown.
    pub lesson: &'a Lesson,
    /// Every lesson, for the chapter list.
    pub lessons: &'a [Lesson],
    /// The lesson before it, if any.
    pub prev: Option<&'a Lesson>,
    /// The lesson after it, if any.
    pub next: Option<&'a Lesson>,
    /// How many lessons the course has.
    pub total: usize,
    /// URL of the script that mounts the lesson's widgets and experiment panels.
    pub script: String,
    /// What live experiments run on (the same for everyone while the server runs).
    pub device: &'a DeviceStatus,
    /// File stem of the code downloads, when the lesson has code to download.
    pub downloads: Option<String>,
}

/// The pages and files that are the same for every student, rendered and encoded once
/// at start-up: every lesson, and each lesson's code as a script and a notebook.
pub struct Prerendered {
    /// Lesson pages by slug.
    pub lessons: HashMap<String, Arc<Encoded>>,
    /// Each lesson's code as a Python script (`.py`), by slug.
    pub scripts: HashMap<String, Arc<Encoded>>,
    /// Each lesson's code as a Jupyter notebook (`.ipynb`), by slug.
    pub notebooks: HashMap<String, Arc<Encoded>>,
}

impl Prerendered {
    /// Renders every lesson of `course` with `layout`, and its downloads.
    pub fn render(
        course: &Course,
        layout: &Layout,
        assets: &Assets,
        device: &DeviceStatus,
    ) -> Result<Self, askama::Error> {
        const HTML: &str = "text/html; charset=utf-8";
        let script = assets.url("js/lesson.js");
        let mut out = Self {
            lessons: HashMap::new(),
            scripts: HashMap::new(),
            notebooks: HashMap::new(),
        };
        for (i, lesson) in course.lessons.iter().enumerate() {
            let downloads = notebook::has_code(lesson).then(|| notebook::file_stem(lesson));
            let page = LessonPage {
                layout,
                lesson,
                lessons: &course.lessons,
                prev: i.checked_sub(1).and_then(|p| course.lessons.get(p)),
                next: course.lessons.get(i + 1),
                total: course.lessons.len(),
                script: script.clone(),
                device,
                downloads: downloads.clone(),
            };
            let slug = lesson.slug.clone();
            out.lessons.insert(
                slug.clone(),
                Encoded::new(page.render()?.into_bytes(), HTML),
            );
            if downloads.is_some() {
                let py = notebook::python_script(lesson).into_bytes();
                let ipynb =
                    serde_json::to_vec_pretty(&notebook::notebook(lesson)).unwrap_or_default();
                out.scripts.insert(
                    slug.clone(),
                    Encoded::new(py, "text/x-python; charset=utf-8"),
                );
                out.notebooks
                    .insert(slug, Encoded::new(ipynb, "application/x-ipynb+json"));
            }
        }
        Ok(out)
    }

    /// Every page and file, for the start-up warm-up.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Encoded>> {
        self.lessons
            .values()
            .chain(self.scripts.values())
            .chain(self.notebooks.values())
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

//! Typed page structs, one per HTML page, each rendered by an askama template under
//! `web/templates/` that extends `base.html`. Templates escape everything by default;
//! only lesson HTML (rendered by our own pipeline at start-up) is marked safe.

use askama::Template;

use crate::assets::{Assets, SYNTAX_CSS};
use crate::course::{Course, Lesson};

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
            stylesheets: vec![assets.url("css/site.css"), assets.url(SYNTAX_CSS)],
        }
    }

    /// A layout with plain asset URLs, for error pages rendered without state.
    pub fn plain() -> Self {
        Self {
            site_title: "GPU Lab".to_string(),
            stylesheets: vec![
                "/static/css/site.css".to_string(),
                format!("/static/{SYNTAX_CSS}"),
            ],
        }
    }
}

/// The course home: every lesson with its summary and reading time.
#[derive(Template)]
#[template(path = "home.html", config = "web/askama.toml")]
pub struct HomePage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The course.
    pub course: &'a Course,
    /// Total reading minutes, for the header.
    pub total_minutes: u32,
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

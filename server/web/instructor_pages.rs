//! The instructor's cockpit as typed values: the gradebook page (sortable headers with
//! their links and `aria-sort`, compact cells, class figures per quiz, stuck flags), the
//! most-missed questions in course order with the section that teaches each, and the
//! live picture of the shared GPU that the page polls from `/instructor/live.json`.

use std::collections::HashMap;

use askama::Template;
use serde::Serialize;

use super::gradebook_table::{QuizFigures, Row, SortKey, View};
use crate::course::Course;
use crate::course::html::{escape, inline_code};
use crate::course::search::SectionRef;
use crate::db::class_summary::MissedByStudents;
use crate::db::experiment_history::StoredRun;
use crate::engine::QueueStats;
use crate::gpu::DeviceKind;
use crate::web::page::Layout;

/// The class gradebook.
#[derive(Template)]
#[template(path = "instructor.html", config = "web/askama.toml")]
pub struct InstructorPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// Column headers after the student column, each sortable.
    pub headers: Vec<SortHeader>,
    /// The student column's header.
    pub name_header: SortHeader,
    /// This page's rows.
    pub rows: Vec<Row>,
    /// Class figures, one per quiz column.
    pub figures: Vec<QuizFigures>,
    /// Students with at least one attempt.
    pub students: usize,
    /// Students matching the filter.
    pub matched: usize,
    /// This page (1-based) and how many there are.
    pub page: usize,
    /// Pages in all.
    pub pages: usize,
    /// Links to the previous and next pages, when there are.
    pub prev_href: Option<String>,
    /// See `prev_href`.
    pub next_href: Option<String>,
    /// The name filter as typed.
    pub filter: String,
    /// Only stuck students shown.
    pub stuck_only: bool,
    /// The sort parameters, kept when the filter form is sent.
    pub sort: String,
    /// `asc` or `desc`.
    pub dir: &'static str,
    /// Most-missed questions, in course order.
    pub missed: Vec<MissedView>,
    /// The shared GPU now.
    pub live: LiveView,
    /// The class round, when one is open.
    pub round: Option<crate::web::routes::class_round::InstructorRound>,
    /// Experiments a round can be opened for: name and title.
    pub round_choices: Vec<(String, String)>,
    /// The class's predictions before live experiments, one strip per question.
    pub predictions: Vec<crate::web::calibration::Strip>,
    /// A confirmation after renaming or merging.
    pub notice: Option<String>,
    /// The page's script.
    pub script: String,
}

/// A sortable column header: its label, the link that sorts by it and, when the table
/// is sorted by it, the direction for `aria-sort`.
#[derive(Debug, Clone)]
pub struct SortHeader {
    /// What the header says.
    pub label: String,
    /// A longer description (the quiz title).
    pub title: String,
    /// The link sorting by this column (the other way round when it already is).
    pub href: String,
    /// `ascending` or `descending` on the sorted column.
    pub aria_sort: Option<&'static str>,
}

/// The key `sort=` takes for `key`, given the quiz ids.
pub fn sort_param(key: &SortKey, quiz_ids: &[&str]) -> String {
    match key {
        SortKey::Name => "name".into(),
        SortKey::Active => "active".into(),
        SortKey::Stuck => "stuck".into(),
        SortKey::Quiz(i) => quiz_ids.get(*i).copied().unwrap_or("name").to_string(),
    }
}

/// `/instructor?…` for `view` with `sort`, `descending` and `page` replaced.
pub fn gradebook_href(view: &View, sort: &str, descending: bool, page: usize) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("sort", sort);
    query.append_pair("dir", if descending { "desc" } else { "asc" });
    if !view.filter.is_empty() {
        query.append_pair("q", &view.filter);
    }
    if view.stuck_only {
        query.append_pair("show", "stuck");
    }
    if page > 1 {
        query.append_pair("page", &page.to_string());
    }
    format!("/instructor?{}", query.finish())
}

/// The header for `key`: a click sorts by it (descending first for scores, activity and
/// flags; ascending for names), or reverses it when it is the current sort.
pub fn sort_header(
    view: &View,
    key: SortKey,
    label: &str,
    title: &str,
    quiz_ids: &[&str],
) -> SortHeader {
    let current = view.sort == key;
    let descending = if current {
        !view.descending
    } else {
        key != SortKey::Name
    };
    SortHeader {
        label: label.to_string(),
        title: title.to_string(),
        href: gradebook_href(view, &sort_param(&key, quiz_ids), descending, 1),
        aria_sort: current.then_some(if view.descending {
            "descending"
        } else {
            "ascending"
        }),
    }
}

/// One most-missed question as the instructor reads it.
#[derive(Debug, Clone, Serialize)]
pub struct MissedView {
    /// Quiz id and title.
    pub quiz_id: String,
    /// The quiz's title.
    pub quiz_title: String,
    /// 1-based number of the question in its quiz.
    pub number: usize,
    /// Question id.
    pub question_id: String,
    /// The question as students read it.
    pub prompt: String,
    /// The same as HTML (escaped, `code spans` set as code).
    pub prompt_html: String,
    /// The lesson section that teaches it.
    pub teaches: Option<SectionRef>,
    /// The per-student counts.
    pub counts: MissedByStudents,
}

/// The counted questions in course order (quiz by quiz, question by question); rows for
/// questions no longer in the course are kept at the end with their ids.
pub fn missed_in_course_order(course: &Course, counted: Vec<MissedByStudents>) -> Vec<MissedView> {
    let mut by_key: HashMap<(String, String), MissedByStudents> = counted
        .into_iter()
        .map(|m| ((m.quiz_id.clone(), m.question_id.clone()), m))
        .collect();
    let mut ordered = Vec::new();
    for quiz in &course.quizzes {
        for (index, question) in quiz.questions.iter().enumerate() {
            if let Some(counts) = by_key.remove(&(quiz.id.clone(), question.id.clone())) {
                ordered.push(MissedView {
                    quiz_id: quiz.id.clone(),
                    quiz_title: quiz.title.clone(),
                    number: index + 1,
                    question_id: question.id.clone(),
                    prompt: question.prompt.clone(),
                    prompt_html: inline_code(&question.prompt),
                    teaches: question.teaches.clone(),
                    counts,
                });
            }
        }
    }
    let mut gone: Vec<MissedByStudents> = by_key.into_values().collect();
    gone.sort_by(|a, b| (&a.quiz_id, &a.question_id).cmp(&(&b.quiz_id, &b.question_id)));
    ordered.extend(gone.into_iter().map(|counts| MissedView {
        quiz_id: counts.quiz_id.clone(),
        quiz_title: counts.quiz_id.clone(),
        number: 0,
        question_id: counts.question_id.clone(),
        prompt: format!("(no longer in the course: {})", counts.question_id),
        prompt_html: format!("(no longer in the course: {})", escape(&counts.question_id)),
        teaches: None,
        counts,
    }));
    ordered
}

/// The shared GPU right now, and the recent history (what `/instructor/live.json` sends).
#[derive(Debug, Clone, Serialize)]
pub struct LiveView {
    /// The device's name and backend.
    pub device: String,
    /// `cuda` or `cpu`.
    pub backend: DeviceKind,
    /// Memory in use and in total, in MiB (device memory on a GPU, host RAM on the CPU).
    pub memory_used_mib: Option<f64>,
    /// See `memory_used_mib`.
    pub memory_total_mib: Option<f64>,
    /// The queue now.
    pub queue: QueueStats,
    /// Use per student: since start-up from the queue, and all-time from the history.
    pub gpu_use: Vec<GpuUseRow>,
    /// The latest finished experiments, newest first.
    pub recent: Vec<RecentRun>,
    /// When this picture was taken, UTC.
    pub taken_at: String,
}

impl LiveView {
    /// What the class shares, for the page's words: `GPU` on a GPU, `CPU` on a server
    /// that runs the experiments on its CPU (so a button never promises a GPU it lacks).
    pub fn unit(&self) -> &'static str {
        self.backend.label()
    }
}

/// One student's use of the shared GPU.
#[derive(Debug, Clone, Serialize)]
pub struct GpuUseRow {
    /// Display name or pseudonym.
    pub name: String,
    /// Waiting or running now.
    pub active_now: u64,
    /// Refused since start-up because the queue was full.
    pub refused: u64,
    /// Finished with a result (all-time, from the history).
    pub done: u64,
    /// Failed (all-time).
    pub failed: u64,
    /// Seconds on the device (all-time).
    pub busy_secs: f64,
    /// Memory the allocator playground holds now, in MiB.
    pub playground_mib: f64,
}

/// One finished experiment, for the live table (by name: the id is the cookie).
#[derive(Debug, Clone, Serialize)]
pub struct RecentRun {
    /// Display name or pseudonym.
    pub name: String,
    /// The experiment.
    pub experiment: String,
    /// Its parameters, as compact JSON.
    pub params: String,
    /// Backend and device.
    pub device: String,
    /// Seconds on the worker.
    pub secs: f64,
    /// `ok`, or the error.
    pub outcome: String,
    /// When it finished, `2026-11-23 22:10 UTC`.
    pub finished: String,
}

impl RecentRun {
    /// `stored` under `name`.
    pub fn new(name: String, stored: StoredRun) -> Self {
        let run = stored.run;
        Self {
            name,
            experiment: run.experiment,
            params: run.params,
            device: format!("{} ({})", run.device, run.backend),
            secs: run.duration_ms as f64 / 1000.0,
            outcome: run.error.unwrap_or_else(|| "ok".into()),
            finished: short_time(&stored.finished_at),
        }
    }
}

/// `2026-11-23T22:10:05.123Z` as `2026-11-23 22:10 UTC` (empty stays empty).
pub fn short_time(iso: &str) -> String {
    match iso.get(..16) {
        Some(minutes) => format!("{} UTC", minutes.replace('T', " ")),
        None => iso.to_string(),
    }
}

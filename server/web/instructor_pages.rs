//! The instructor's cockpit as typed values: the gradebook page (sortable headers with
//! their links and `aria-sort`, compact cells, class figures per quiz, stuck flags), the
//! most-missed questions in course order with the section that teaches each, and the
//! live picture of the shared GPU that the page polls from `/instructor/live.json`.

use std::collections::HashMap;

use askama::Template;
use serde::Serialize;

use crate::classroom::gradebook::shown_name;
use crate::classroom::gradebook::{QuizFigures, Row, SortKey, View};
use crate::course::Course;
use crate::course::html::{escape, inline_code};
use crate::course::search::SectionRef;
use crate::db::class_summary::MissedByStudents;
use crate::db::experiment_history::{self, StoredRun};
use crate::db::gradebook;
use crate::engine::QueueStats;
use crate::gpu::DeviceKind;
use crate::web::error::AppError;
use crate::web::page::Layout;
use crate::web::state::AppState;

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
    pub round: Option<crate::classroom::round::InstructorRound>,
    /// Experiments a round can be opened for: name and title.
    pub round_choices: Vec<(String, String)>,
    /// The class's predictions before live experiments, one strip per question.
    pub predictions: Vec<crate::classroom::calibration::Strip>,
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
/// Finished experiments listed on the live view.
const RECENT_RUNS: usize = 20;

/// The shared GPU now: device, memory, queue, use per student and the latest runs.
pub async fn live_view(state: &AppState) -> Result<LiveView, AppError> {
    let (names, key, recent, totals) = state
        .db
        .run(|tx| {
            Ok((
                gradebook::display_names(tx)?,
                gradebook::pseudonym_key(tx)?,
                experiment_history::recent(tx, RECENT_RUNS)?,
                experiment_history::totals_by_student(tx)?,
            ))
        })
        .await?;
    let name = |id: &str| {
        shown_name(
            names.get(id).map(String::as_str),
            &gradebook::pseudonym(&key, id),
        )
    };
    let playgrounds = state.engine.playgrounds.clone();
    let memory =
        tokio::task::spawn_blocking(move || crate::playground::snapshot(playgrounds.source()))
            .await
            .ok();
    let (used, total) = match &memory {
        Some(m) if m.backend.is_cuda() => (m.nvml_used_bytes, m.nvml_total_bytes),
        Some(m) => (
            m.host_total_bytes
                .zip(m.host_available_bytes)
                .map(|(t, a)| t.saturating_sub(a)),
            m.host_total_bytes,
        ),
        None => (None, None),
    };
    let mib = |bytes: Option<u64>| bytes.map(|b| (b as f64 / f64::from(1u32 << 20)).round());
    // Waiting or running now, and refused since start-up, from the queue's own records.
    let now: HashMap<String, (u64, u64)> = state
        .engine
        .usage()
        .await
        .into_iter()
        .map(|(id, u)| {
            let active = u.submitted.saturating_sub(u.done + u.failed);
            (id, (active, u.rejected))
        })
        .collect();
    let mut ids: Vec<&String> = totals.iter().map(|(id, ..)| id).collect();
    ids.extend(
        now.keys()
            .filter(|id| !totals.iter().any(|(t, ..)| t == *id)),
    );
    let gpu_use = ids
        .into_iter()
        .map(|id| {
            let (done, failed, busy_secs) = totals
                .iter()
                .find(|(t, ..)| t == id)
                .map_or((0, 0, 0.0), |(_, d, f, s)| (*d, *f, *s));
            GpuUseRow {
                name: name(id),
                active_now: now.get(id).map_or(0, |n| n.0),
                refused: now.get(id).map_or(0, |n| n.1),
                done,
                failed,
                busy_secs,
                playground_mib: state.engine.playgrounds.reserved_by(id) as f64
                    / f64::from(1u32 << 20),
            }
        })
        .collect();
    let taken_at = state.db.run(crate::db::clock::text_to_the_second).await?;
    Ok(LiveView {
        device: state.engine.card.name.clone(),
        backend: state.engine.card.kind,
        memory_used_mib: mib(used),
        memory_total_mib: mib(total),
        queue: state.engine.stats().await,
        gpu_use,
        recent: recent
            .into_iter()
            .map(|stored| RecentRun::new(name(&stored.run.student_id), stored))
            .collect(),
        taken_at: short_time(&taken_at),
    })
}

//! The learner's pages beyond lessons and quizzes: the about page (with the address it
//! was served from and this server's device card), search across the course, the
//! tuning labs with the learner's latest graded results, the completion page after the
//! final exam, and each lesson's code as a Python script and a Jupyter notebook
//! (pre-rendered at start-up like the lessons).

use askama::Template;
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::classroom::learner_flow::long_date;
use crate::course::search::MAX_QUERY_CHARS;
use crate::course::{FINAL_EXAM_ID, notebook};
use crate::db::{lab_attempts, progress};
use crate::web::encoded::CacheHeaders;
use crate::web::error::AppError;
use crate::web::identity::StudentId;
use crate::web::lab_pages::{LabsPage, passed_count, rows};
use crate::web::learner_pages::{
    AboutPage, CompletionPage, CompletionRecord, SearchPage, card_rows,
};
use crate::web::state::AppState;

/// Results shown for one query.
const MAX_HITS: usize = 30;

/// The address a request reached: its `Host` (when it looks like a host name or
/// address) with the scheme a proxy reports, else the address the server listens on.
fn origin(headers: &HeaderMap, state: &AppState) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.len() <= 255
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .map_or_else(|| state.config.addr.to_string(), str::to_string);
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    format!("{}://{host}", if https { "https" } else { "http" })
}

/// A page rendered per request, revalidated by a weak ETag of its bytes (weak: the
/// compression layer may send it in another encoding).
fn with_etag(html: String, request: &HeaderMap) -> Response {
    let digest = Sha256::digest(html.as_bytes());
    let tag = format!(
        "W/\"{}\"",
        digest
            .iter()
            .take(12)
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    let matches = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|list| {
            list.split(',')
                .any(|t| t.trim().trim_start_matches("W/") == tag.trim_start_matches("W/"))
        });
    let etag = HeaderValue::from_str(&tag).unwrap_or(HeaderValue::from_static("W/\"0\""));
    let cache = HeaderValue::from_static("no-cache");
    if matches {
        return (
            StatusCode::NOT_MODIFIED,
            [(header::ETAG, etag), (header::CACHE_CONTROL, cache)],
        )
            .into_response();
    }
    (
        [(header::ETAG, etag), (header::CACHE_CONTROL, cache)],
        Html(html),
    )
        .into_response()
}

/// `GET /about`: how to run GPU Lab, where this copy is served and what it runs on.
pub async fn about(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let page = AboutPage {
        layout: &state.layout,
        lesson_count: state.course.lessons.len(),
        version: env!("CARGO_PKG_VERSION"),
        origin: origin(&headers, &state),
        device: &state.device,
        card: card_rows(&state.engine.card),
        script: state.assets.url("js/lesson.js"),
        runs_script: state.assets.url("js/my-gpu-runs.js"),
    };
    Ok(with_etag(page.render()?, &headers))
}

/// `?q=` of the search page.
#[derive(serde::Deserialize)]
pub struct SearchQuery {
    /// What to look for.
    #[serde(default)]
    q: String,
}

/// `GET /search?q=`: lesson sections and quiz questions matching every word.
pub async fn search(
    State(state): State<AppState>,
    Query(query): Query<SearchQuery>,
) -> Result<Html<String>, AppError> {
    let query: String = query.q.trim().chars().take(MAX_QUERY_CHARS).collect();
    let page = SearchPage {
        layout: &state.layout,
        results: state.course.search.search(&query, MAX_HITS),
        query,
    };
    Ok(Html(page.render()?))
}

/// `GET /labs`: every tuning lab with this learner's best and latest graded result.
pub async fn labs(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Html<String>, AppError> {
    let records = state
        .db
        .run(move |tx| lab_attempts::records(tx, &student.0))
        .await?;
    let labs = rows(&state.course, &records);
    let page = LabsPage {
        layout: &state.layout,
        passed: labs
            .iter()
            .filter(|l| l.record.as_ref().is_some_and(|r| r.passed))
            .count(),
        labs,
    };
    Ok(Html(page.render()?))
}

/// `GET /final-exam/complete`: the learner's completion record once the final exam is
/// passed, or what is left to do.
pub async fn completion(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Html<String>, AppError> {
    let (data, labs_passed) = state
        .db
        .run(move |tx| {
            Ok((
                progress::export(tx, &student.0)?,
                lab_attempts::passed(tx, &student.0)?,
            ))
        })
        .await?;
    let exam = data
        .progress
        .iter()
        .find(|p| p.quiz_id == FINAL_EXAM_ID && p.passed);
    let first_pass = data
        .attempts
        .iter()
        .find(|a| a.quiz_id == FINAL_EXAM_ID && a.passed);
    let record = exam.zip(first_pass).map(|(best, first)| CompletionRecord {
        percent: best.best_percent,
        correct: best.best_correct,
        total: best.best_total,
        date: long_date(&first.submitted_at),
        lessons_passed: state
            .course
            .lessons
            .iter()
            .filter(|l| {
                data.progress
                    .iter()
                    .any(|p| p.quiz_id == l.slug && p.passed)
            })
            .count(),
        lesson_quizzes: state.course.lessons.len(),
    });
    let page = CompletionPage {
        layout: &state.layout,
        course_title: &state.course.title,
        name: data.display_name,
        record,
        lessons: &state.course.lessons,
        labs_passed: passed_count(&labs_passed),
        labs_total: crate::experiments::labs::ALL.len(),
        script: state.assets.url("js/completion.js"),
    };
    Ok(Html(page.render()?))
}

/// Downloads are the same for everyone: revalidated by ETag like the lessons.
const DOWNLOAD_CACHE: HeaderValue = HeaderValue::from_static("no-cache");

fn download(
    state: &AppState,
    slug: &str,
    extension: &str,
    headers: &CacheHeaders,
) -> Result<Response, AppError> {
    let not_found = || AppError::NotFound(format!("/lessons/{slug}/code.{extension}"));
    let (lesson, _, _) = state.course.lesson(slug).ok_or_else(not_found)?;
    let files = if extension == "py" {
        &state.pages.scripts
    } else {
        &state.pages.notebooks
    };
    let file = files.get(slug).ok_or_else(not_found)?;
    let mut response = file.respond(headers, DOWNLOAD_CACHE);
    let disposition = format!(
        "attachment; filename=\"{}.{extension}\"",
        notebook::file_stem(lesson)
    );
    if let Ok(value) = HeaderValue::from_str(&disposition) {
        response
            .headers_mut()
            .insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}

/// `GET /lessons/{slug}/code.py`: the lesson's code as a Python script.
pub async fn lesson_script(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: CacheHeaders,
) -> Result<Response, AppError> {
    download(&state, &slug, "py", &headers)
}

/// `GET /lessons/{slug}/code.ipynb`: the lesson's code as a Jupyter notebook.
pub async fn lesson_notebook(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: CacheHeaders,
) -> Result<Response, AppError> {
    download(&state, &slug, "ipynb", &headers)
}

//! HTML pages: the course home, lessons, the about page and the 404 fallback. Lessons
//! were rendered at start-up, so a lesson request only fills the page template.

use askama::Template;
use std::collections::HashMap;

use axum::extract::{Extension, OriginalUri, Path, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{Html, Response};

use crate::course::FINAL_EXAM_ID;
use crate::db::progress;
use crate::web::error::AppError;
use crate::web::identity::StudentId;
use crate::web::page::{HomePage, QuizState};
use crate::web::state::AppState;

/// `GET /`: the lesson list with this student's progress.
pub async fn home(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Html<String>, AppError> {
    let (rows, display_name) = state
        .db
        .run(move |conn| {
            Ok((
                progress::progress(conn, &student.0)?,
                progress::display_name(conn, &student.0)?,
            ))
        })
        .await?;
    let by_quiz: HashMap<&str, &progress::QuizProgress> =
        rows.iter().map(|p| (p.quiz_id.as_str(), p)).collect();
    let states = state
        .course
        .lessons
        .iter()
        .map(|l| QuizState::from_progress(by_quiz.get(l.slug.as_str()).copied()))
        .collect();
    let page = HomePage {
        layout: &state.layout,
        course: &state.course,
        total_minutes: state.course.lessons.iter().map(|l| l.minutes).sum(),
        states,
        exam_state: QuizState::from_progress(by_quiz.get(FINAL_EXAM_ID).copied()),
        passed_count: rows
            .iter()
            .filter(|p| p.passed && state.course.quiz(&p.quiz_id).is_some())
            .count(),
        display_name,
    };
    Ok(Html(page.render()?))
}

/// Lesson and about pages are the same for everyone: they are revalidated by ETag on
/// every use, so a new build or content reload is seen at once.
const PAGE_CACHE: HeaderValue = HeaderValue::from_static("no-cache");

/// `GET /lessons/{slug}`: one lesson (rendered and encoded at start-up), or the 404 page.
pub async fn lesson(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let page = state
        .pages
        .lessons
        .get(&slug)
        .ok_or_else(|| AppError::NotFound(format!("/lessons/{slug}")))?;
    Ok(page.respond(&headers, PAGE_CACHE))
}

/// `GET /about`: how to run GPU Lab and the hardware slot.
pub async fn about(State(state): State<AppState>, headers: HeaderMap) -> Response {
    state.pages.about.respond(&headers, PAGE_CACHE)
}

/// Any other path: the 404 page.
pub async fn not_found(OriginalUri(uri): OriginalUri) -> AppError {
    AppError::NotFound(uri.path().to_string())
}

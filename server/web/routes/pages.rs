//! HTML pages: the course home, lessons and the 404 fallback. Lessons were rendered at
//! start-up, so a lesson request only picks the encoding; the home page is the
//! student's own (progress, where to continue, a just-saved name).

use askama::Template;
use std::collections::HashMap;

use axum::extract::{Extension, OriginalUri, Path, Query, State};
use axum::http::HeaderValue;
use axum::response::{Html, Response};

use crate::classroom::learner_flow::continue_from;
use crate::course::FINAL_EXAM_ID;
use crate::db::progress;
use crate::web::encoded::CacheHeaders;
use crate::web::error::AppError;
use crate::web::identity::StudentId;
use crate::web::page::{HomePage, QuizState};
use crate::web::state::AppState;

/// `GET /`: the lesson list with this student's progress and where to continue;
/// `?saved=name` confirms a display name just saved.
pub async fn home(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Html<String>, AppError> {
    let (data, resume_code, labs_passed) = state
        .db
        .run(move |tx| {
            Ok((
                progress::export(tx, &student.0)?,
                crate::db::student_identity::resume_code(tx, &student.0)?,
                crate::db::lab_attempts::passed(tx, &student.0)?,
            ))
        })
        .await?;
    let (rows, display_name) = (&data.progress, data.display_name.clone());
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
        labs_passed: crate::web::lab_pages::passed_count(&labs_passed),
        labs_total: crate::experiments::labs::ALL.len(),
        display_name,
        continue_at: continue_from(&state.course, &data.progress, &data.attempts),
        device: &state.device,
        saved: query.get("saved").is_some_and(|v| v == "name"),
        resume_code: resume_code.map(|c| crate::db::student_identity::display_code(&c)),
        resumed: query.contains_key("resumed"),
        script: state.assets.url("js/home.js"),
        calibration: crate::classroom::calibration::calibrate(
            &data.predictions,
            &state.course.predictions,
        ),
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
    headers: CacheHeaders,
) -> Result<Response, AppError> {
    let page = state
        .pages
        .lessons
        .get(&slug)
        .ok_or_else(|| AppError::NotFound(format!("/lessons/{slug}")))?;
    Ok(page.respond(&headers, PAGE_CACHE))
}

/// Any other path: the 404 page.
pub async fn not_found(OriginalUri(uri): OriginalUri) -> AppError {
    AppError::NotFound(uri.path().to_string())
}

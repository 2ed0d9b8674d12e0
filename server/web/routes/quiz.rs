//! Quizzes over HTTP: the form page, the form post (results page, no JavaScript needed)
//! and the JSON API the page script uses to submit without a reload. Every path grades
//! on the server, stores the attempt in one transaction, and only then answers.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::response::Html;
use serde::Serialize;

use askama::Template;

use crate::course::quiz::{Graded, Quiz};
use crate::course::{FINAL_EXAM_ID, submission};
use crate::db::progress;
use crate::web::error::{ApiError, AppError, ErrorBody};
use crate::web::identity::StudentId;
use crate::web::page::{QuizPage, QuizResultPage, QuizState};
use crate::web::state::AppState;

fn find<'a>(state: &'a AppState, id: &str, path: &str) -> Result<&'a Quiz, AppError> {
    state
        .course
        .quiz(id)
        .ok_or_else(|| AppError::NotFound(path.to_string()))
}

fn quiz_href(id: &str) -> String {
    if id == FINAL_EXAM_ID {
        "/final-exam".into()
    } else {
        format!("/lessons/{id}/quiz")
    }
}

/// Grades `answers` and stores the attempt; returns only after the commit.
async fn grade_and_store(
    state: &AppState,
    student: &StudentId,
    quiz: &Quiz,
    answers: Vec<crate::course::quiz::Answer>,
) -> Result<Graded, AppError> {
    if let Err(wait) = state.attempt_limiter.check(&student.0) {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        return Err(AppError::TooMany {
            retry_after_secs: secs,
            message: format!(
                "You have submitted {} quiz attempts in the last minute, the most one student may. Read the explanations, then try again in about {secs} s.",
                state.config.limits.attempts_per_minute
            ),
        });
    }
    let graded = quiz.grade(&answers);
    let (student, quiz_id, stored) = (student.0.clone(), quiz.id.clone(), graded.clone());
    state
        .db
        .run(move |conn| progress::record_attempt(conn, &student, &quiz_id, &stored))
        .await?;
    Ok(graded)
}

async fn quiz_page(
    state: &AppState,
    student: &StudentId,
    quiz: &Quiz,
) -> Result<Html<String>, AppError> {
    let (id, quiz_id) = (student.0.clone(), quiz.id.clone());
    let best = state
        .db
        .run(move |conn| {
            Ok(progress::progress(conn, &id)?
                .into_iter()
                .find(|p| p.quiz_id == quiz_id))
        })
        .await?;
    let back_href = if quiz.id == FINAL_EXAM_ID {
        "/".to_string()
    } else {
        format!("/lessons/{}", quiz.id)
    };
    let page = QuizPage {
        layout: &state.layout,
        quiz,
        action: quiz_href(&quiz.id),
        back_href,
        state: QuizState::from_progress(best.as_ref()),
        script: state.assets.url("js/quiz.js"),
    };
    Ok(Html(page.render()?))
}

fn result_page(state: &AppState, quiz: &Quiz, graded: &Graded) -> Result<Html<String>, AppError> {
    let next = state.course.lesson(&quiz.id).and_then(|(_, _, next)| next);
    let (next_href, next_label) = match next {
        Some(lesson) => (
            format!("/lessons/{}", lesson.slug),
            format!("Next lesson: {}", lesson.title),
        ),
        None if quiz.id == FINAL_EXAM_ID => {
            ("/".to_string(), "Back to the course home".to_string())
        }
        None => (
            "/final-exam".to_string(),
            "On to the final exam".to_string(),
        ),
    };
    let page = QuizResultPage {
        layout: &state.layout,
        quiz,
        graded,
        retake_href: quiz_href(&quiz.id),
        next_href,
        next_label,
    };
    Ok(Html(page.render()?))
}

async fn submit_form(
    state: &AppState,
    student: &StudentId,
    quiz: &Quiz,
    body: &[u8],
) -> Result<Html<String>, AppError> {
    let answers = submission::from_form(quiz, &crate::web::extract::form(body)?)
        .map_err(AppError::Invalid)?;
    let graded = grade_and_store(state, student, quiz, answers).await?;
    result_page(state, quiz, &graded)
}

/// `GET /lessons/{slug}/quiz`.
pub async fn lesson_quiz(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Extension(student): Extension<StudentId>,
) -> Result<Html<String>, AppError> {
    let quiz = find(&state, &slug, &format!("/lessons/{slug}/quiz"))?;
    quiz_page(&state, &student, quiz).await
}

/// `POST /lessons/{slug}/quiz`: a plain form submission.
pub async fn submit_lesson_quiz(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Html<String>, AppError> {
    let quiz = find(&state, &slug, &format!("/lessons/{slug}/quiz"))?;
    submit_form(&state, &student, quiz, &body).await
}

/// `GET /final-exam`.
pub async fn final_exam(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Html<String>, AppError> {
    let quiz = find(&state, FINAL_EXAM_ID, "/final-exam")?;
    quiz_page(&state, &student, quiz).await
}

/// `POST /final-exam`.
pub async fn submit_final_exam(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Html<String>, AppError> {
    let quiz = find(&state, FINAL_EXAM_ID, "/final-exam")?;
    submit_form(&state, &student, quiz, &body).await
}

/// A quiz as the browser may see it before submitting: no key, no explanations.
#[derive(Serialize)]
pub struct PublicQuiz<'a> {
    id: &'a str,
    title: &'a str,
    pass_rule: &'static str,
    questions: Vec<PublicQuestion<'a>>,
}

#[derive(Serialize)]
struct PublicQuestion<'a> {
    id: &'a str,
    kind: &'static str,
    prompt: &'a str,
    options: &'a [String],
    unit: &'a str,
}

/// A quiz without its answer key.
#[utoipa::path(get, path = "/api/quizzes/{id}", tag = "quizzes",
    params(("id" = String, Path, description = "A lesson slug, or `final-exam`")),
    responses(
        (status = 200, description = "OK", body = Object),
        (status = 404, description = "No such quiz", body = ErrorBody),
    ))]
pub async fn api_quiz(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let quiz = find(&state, &id, &format!("/api/quizzes/{id}"))?;
    let public = PublicQuiz {
        id: &quiz.id,
        title: &quiz.title,
        pass_rule: "more than 75%",
        questions: quiz
            .questions
            .iter()
            .map(|q| PublicQuestion {
                id: &q.id,
                kind: q.kind_name(),
                prompt: &q.prompt,
                options: q.options(),
                unit: q.unit(),
            })
            .collect(),
    };
    Ok(Json(
        serde_json::to_value(public).map_err(|e| AppError::BadRequest(e.to_string()))?,
    ))
}

/// Answers by question id: an option index, a number, or a list of option indices.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JsonSubmission {
    #[schema(value_type = std::collections::HashMap<String, AnswerValue>)]
    answers: serde_json::Map<String, serde_json::Value>,
}

/// One answer: an option index, a number, or a list of option indices.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum AnswerValue {
    /// The chosen option's index.
    Choice(u64),
    /// A numeric answer.
    Number(f64),
    /// The chosen options' indices.
    Choices(Vec<u64>),
}

/// `POST /api/quizzes/{id}/attempts` with `{"answers": {"<question id>": …}}`.
#[utoipa::path(post, path = "/api/quizzes/{id}/attempts", tag = "quizzes",
    params(("id" = String, Path, description = "A lesson slug, or `final-exam`")),
    request_body = JsonSubmission,
    responses(
        (status = 200, description = "Graded and stored before this answer", body = Object),
        (status = 400, description = "Not JSON of that shape", body = ErrorBody),
        (status = 404, description = "No such quiz", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "An unknown question or an answer of the wrong kind", body = ErrorBody),
    ))]
pub async fn api_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Json<Graded>, ApiError> {
    let quiz = find(&state, &id, &format!("/api/quizzes/{id}/attempts"))?;
    let submission: JsonSubmission =
        crate::web::extract::json(&body, "{\"answers\": {\"<question id>\": <answer>}}")?;
    let answers = submission::from_json(quiz, &submission.answers).map_err(AppError::Invalid)?;
    Ok(Json(
        grade_and_store(&state, &student, quiz, answers).await?,
    ))
}

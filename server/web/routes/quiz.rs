//! Quizzes over HTTP: the form page, the form post (results page, no JavaScript needed)
//! and the JSON API the page script uses to submit without a reload. Every path grades
//! on the server, stores the attempt in one transaction, and only then answers. A
//! refused form post shows the quiz again with the learner's answers and a message
//! beside each question that needs another look.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde::Serialize;

use askama::Template;

use crate::classroom::learner_flow::{Step, after_quiz};
use crate::course::FINAL_EXAM_ID;
use crate::course::grading::Graded;
use crate::course::quiz::Quiz;
use crate::course::submission::{self, AnswerProblem};
use crate::db::progress;
use crate::web::error::{ApiError, AppError, ErrorBody};
use crate::web::identity::StudentId;
use crate::web::page::QuizState;
use crate::web::quiz_pages::{QuizPage, QuizResultPage};
use crate::web::state::AppState;

fn find<'a>(state: &'a AppState, id: &str, path: &str) -> Result<&'a Quiz, AppError> {
    state
        .course
        .quiz(id)
        .ok_or_else(|| AppError::NotFound(path.to_string()))
}

/// This student's state on `quiz`, read from the database.
async fn quiz_state(
    state: &AppState,
    student: &StudentId,
    quiz: &Quiz,
) -> Result<QuizState, AppError> {
    let (id, quiz_id) = (student.0.clone(), quiz.id.clone());
    let best = state
        .db
        .run(move |tx| {
            Ok(progress::progress(tx, &id)?
                .into_iter()
                .find(|p| p.quiz_id == quiz_id))
        })
        .await?;
    Ok(QuizState::from_progress(best.as_ref()))
}

/// Grades `answers` and stores the attempt (the class's domain:
/// [`crate::classroom::quizzes`]) once the student is within the attempt rate; returns
/// only after the commit, with the student's state on the quiz including this attempt.
async fn grade_and_store(
    state: &AppState,
    student: &StudentId,
    quiz: &Quiz,
    answers: Vec<crate::course::quiz::Answer>,
) -> Result<(Graded, QuizState), AppError> {
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
    let (graded, best) = state
        .classroom
        .grade_and_store(&student.0, quiz, answers)
        .await?;
    Ok((graded, QuizState::from_progress(best.as_ref())))
}

/// The quiz form; with `given` and `problems` after a refused submission (answered 422
/// then, so scripts and tests see the refusal while people see their answers).
async fn quiz_page(
    state: &AppState,
    student: &StudentId,
    quiz: &Quiz,
    given: &[(String, String)],
    problems: Vec<AnswerProblem>,
) -> Result<Response, AppError> {
    let status = if problems.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    let page = QuizPage::new(
        &state.layout,
        quiz,
        quiz_state(state, student, quiz).await?,
        state.assets.url("js/quiz.js"),
        given,
        problems,
    );
    Ok((status, Html(page.render()?)).into_response())
}

async fn submit_form(
    state: &AppState,
    student: &StudentId,
    quiz: &Quiz,
    body: &[u8],
) -> Result<Response, AppError> {
    let pairs = crate::web::extract::form(body)?;
    let answers = match submission::from_form(quiz, &pairs) {
        Ok(answers) => answers,
        Err(rejected) => return quiz_page(state, student, quiz, &pairs, rejected.problems).await,
    };
    let (graded, after) = grade_and_store(state, student, quiz, answers).await?;
    let steps = after_quiz(&state.course, quiz, graded.passed);
    let page = QuizResultPage::new(&state.layout, quiz, &graded, after, steps);
    Ok(Html(page.render()?).into_response())
}

/// `GET /lessons/{slug}/quiz`.
pub async fn lesson_quiz(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Extension(student): Extension<StudentId>,
) -> Result<Response, AppError> {
    let quiz = find(&state, &slug, &format!("/lessons/{slug}/quiz"))?;
    quiz_page(&state, &student, quiz, &[], Vec::new()).await
}

/// `POST /lessons/{slug}/quiz`: a plain form submission.
pub async fn submit_lesson_quiz(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Response, AppError> {
    let quiz = find(&state, &slug, &format!("/lessons/{slug}/quiz"))?;
    submit_form(&state, &student, quiz, &body).await
}

/// `GET /final-exam`.
pub async fn final_exam(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Response, AppError> {
    let quiz = find(&state, FINAL_EXAM_ID, "/final-exam")?;
    quiz_page(&state, &student, quiz, &[], Vec::new()).await
}

/// `POST /final-exam`.
pub async fn submit_final_exam(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Response, AppError> {
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

/// One answer: an option index, a number (or the text typed for it, read the way the
/// lessons print numbers: `1,048,576`, `14.9 GiB`), or a list of option indices.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum AnswerValue {
    /// The chosen option's index.
    Choice(u64),
    /// A numeric answer.
    Number(f64),
    /// A numeric answer as typed.
    Text(String),
    /// The chosen options' indices.
    Choices(Vec<u64>),
}

/// A graded attempt, with the student's state on the quiz after it and the steps to
/// offer next.
#[derive(Serialize)]
pub struct AttemptResult {
    /// The grading, question by question.
    #[serde(flatten)]
    pub graded: Graded,
    /// The quiz's status line after this attempt.
    pub state: QuizState,
    /// Where to go from here (next lesson, review, retake, completion page).
    pub next: Vec<Step>,
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
        (status = 422, description = "Unanswered questions, an unreadable number, an unknown question or an answer of the wrong kind; `error.problems` names each question", body = ErrorBody),
    ))]
pub async fn api_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Json<AttemptResult>, ApiError> {
    let quiz = find(&state, &id, &format!("/api/quizzes/{id}/attempts"))?;
    let submission: JsonSubmission =
        crate::web::extract::json(&body, "{\"answers\": {\"<question id>\": <answer>}}")?;
    let answers = submission::from_json(quiz, &submission.answers).map_err(AppError::Answers)?;
    let (graded, state_after) = grade_and_store(&state, &student, quiz, answers).await?;
    let next = after_quiz(&state.course, quiz, graded.passed);
    Ok(Json(AttemptResult {
        graded,
        state: state_after,
        next,
    }))
}

//! The web layer's one error type. Every handler returns `Result<_, AppError>`, and the
//! single `IntoResponse` below picks the status and renders the error page. JSON
//! endpoints wrap it in [`ApiError`], which renders the same status and message as JSON.
//! Internal errors are logged with their cause and shown only as a generic message.

use askama::Template;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use serde::Serialize;

use crate::course::submission::{AnswerProblem, Rejected};
use crate::db::DbError;
use crate::web::page::ErrorPage;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// No page or asset at this path.
    #[error("not found: {0}")]
    NotFound(String),
    /// The request is malformed (not UTF-8, not JSON, not a form).
    #[error("{0}")]
    BadRequest(String),
    /// The request is well-formed but its content is wrong (unknown question, missing
    /// answer, wrong type).
    #[error("{0}")]
    Invalid(String),
    /// A quiz submission with unanswered or unreadable answers, each problem naming its
    /// question's number.
    #[error("{0}")]
    Answers(Rejected),
    /// A token is needed and was missing or wrong.
    #[error("{0}")]
    Unauthorized(String),
    /// The feature is switched off on this server.
    #[error("{0}")]
    Forbidden(String),
    /// The server cannot take this now (shutting down, database not writable).
    #[error("{0}")]
    Unavailable(String),
    /// New work of this kind (`what`: "Experiments") is refused while the database
    /// cannot keep its outcome.
    #[error("{what} are paused: {why}")]
    Paused {
        /// What is refused, as the sentence's subject.
        what: &'static str,
        /// Why the database takes no writes.
        why: crate::db::health::Unwritable,
    },
    /// The request does not fit the current state (a class round already run).
    #[error("{0}")]
    Conflict(String),
    /// A limit for this student or address is used up; try again after a while.
    #[error("{message}")]
    TooMany {
        /// Seconds until a retry may succeed (sent as `Retry-After`).
        retry_after_secs: u64,
        /// Which limit, in words, and what to do.
        message: String,
    },
    /// A request the framework refused before a handler ran (body too large, a path
    /// segment that is not UTF-8, a method the route does not take), with its status.
    #[error("{1}")]
    Rejected(StatusCode, String),
    /// A page template failed to render (a bug, not the student's fault).
    #[error("template error: {0}")]
    Template(#[from] askama::Error),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] DbError),
}

impl AppError {
    fn status(&self) -> StatusCode {
        match self {
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Invalid(_) | Self::Answers(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::Unavailable(_) | Self::Paused { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Rejected(status, _) => *status,
            Self::Database(e) if e.is_unavailable() || e.unwritable().is_some() => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::Template(_) | Self::Database(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Heading and message safe to show the student.
    fn public(&self) -> (&'static str, String) {
        match self {
            Self::NotFound(path) => (
                "Page not found",
                format!("There is no page at {path}. The course home lists every lesson."),
            ),
            Self::BadRequest(m) => ("Bad request", m.clone()),
            Self::Invalid(m) => ("Please check your answers", m.clone()),
            Self::Answers(rejected) => ("Please check your answers", rejected.to_string()),
            Self::Unauthorized(m) => ("Token needed", m.clone()),
            Self::Forbidden(m) => ("Not available", m.clone()),
            Self::Unavailable(m) => ("Try again shortly", m.clone()),
            Self::Paused { what, why } => (
                "Paused",
                format!(
                    "{what} are paused because the server's database cannot save anything just now ({why}); nothing was started. Reading the course still works; try again in a few minutes."
                ),
            ),
            Self::Conflict(m) => ("Not now", m.clone()),
            Self::TooMany { message, .. } => ("Slow down a little", message.clone()),
            Self::Rejected(_, m) => ("Request not accepted", m.clone()),
            Self::Database(e) if e.unwritable().is_some() => {
                // `db::health` logs the state once when it changes, not once a request.
                tracing::debug!(error = %e, "a write refused: the database is not writable");
                let why = e.unwritable().map_or("", |why| why.for_students());
                ("Nothing was saved", why.to_string())
            }
            Self::Database(e) if e.is_unavailable() => {
                tracing::warn!(error = %e, "database unavailable");
                (
                    "Try again shortly",
                    "The database cannot be reached just now. Nothing you sent was saved; try again in a few seconds.".to_string(),
                )
            }
            Self::Template(_) | Self::Database(_) => {
                tracing::error!(error = %self, "internal error");
                (
                    "Something went wrong",
                    "The server hit an internal error and has logged it. Nothing you sent was saved; try again, or go back to the course home.".to_string(),
                )
            }
        }
    }
}

impl AppError {
    /// Seconds a client should wait before trying again, when that is known: a limit's
    /// wait, or how long a database fault usually takes to clear.
    fn retry_after(&self) -> Option<u64> {
        match self {
            Self::TooMany {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            Self::Database(e) if e.unwritable().is_some() => {
                Some(crate::db::health::RETRY_AFTER_SECS)
            }
            Self::Paused { .. } => Some(crate::db::health::RETRY_AFTER_SECS),
            Self::Database(e) if e.is_unavailable() => Some(5),
            _ => None,
        }
    }

    /// `Retry-After` for a 429 or a database fault's 503.
    fn with_retry_after(&self, mut response: Response) -> Response {
        if let Some(secs) = self.retry_after() {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(secs),
            );
        }
        response
    }
}

impl From<crate::classroom::ClassroomError> for AppError {
    fn from(error: crate::classroom::ClassroomError) -> Self {
        use crate::classroom::ClassroomError as E;
        match error {
            E::Malformed(message) => Self::BadRequest(message),
            E::Invalid(message) => Self::Invalid(message),
            E::Conflict(message) => Self::Conflict(message),
            E::Database(e) => Self::Database(e),
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let (heading, detail) = self.public();
        let page = ErrorPage::new(status.as_u16(), heading, &detail);
        let response = match page.render() {
            Ok(html) => (status, Html(html)).into_response(),
            Err(e) => {
                tracing::error!(error = %e, "error page failed to render");
                (status, detail).into_response()
            }
        };
        self.with_retry_after(response)
    }
}

/// The JSON shape of every API error: `{"error": {"status": …, "message": …}}`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// The HTTP status, repeated.
    pub status: u16,
    /// A sentence saying what was wrong.
    pub message: String,
    /// For a refused quiz submission: each problem with the question it is about, so a
    /// page can mark that question's field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub problems: Vec<AnswerProblem>,
}

impl ErrorBody {
    /// The body for `status` with `message`.
    pub fn new(status: StatusCode, message: String) -> Self {
        Self {
            error: ErrorDetail {
                status: status.as_u16(),
                message,
                problems: Vec::new(),
            },
        }
    }
}

/// An [`AppError`] rendered as an [`ErrorBody`].
#[derive(Debug)]
pub struct ApiError(pub AppError);

impl<E: Into<AppError>> From<E> for ApiError {
    fn from(e: E) -> Self {
        Self(e.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.0.status();
        let (_, message) = self.0.public();
        let mut body = ErrorBody::new(status, message);
        if let AppError::Answers(rejected) = &self.0 {
            body.error.problems = rejected.problems.clone();
        }
        let response = (status, Json(body)).into_response();
        self.0.with_retry_after(response)
    }
}

/// Whether `response` is one of the framework's own 4xx answers (extractor rejections
/// such as a body over the limit, a bad path segment, a wrong method): a client error
/// with no content type or a `text/plain` one. [`uniform_rejection`] reshapes it.
pub fn is_bare_rejection(response: &Response) -> bool {
    response.status().is_client_error()
        && response
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_none_or(|t| t.starts_with("text/plain"))
}

/// A bare rejection given the same shape as every other error — JSON under `/api/`
/// (`api`), the error page elsewhere — so clients can always read `error.message`; its
/// `Retry-After` is kept.
pub async fn uniform_rejection(response: Response, api: bool) -> Response {
    let status = response.status();
    let retry_after = response
        .headers()
        .get(axum::http::header::RETRY_AFTER)
        .cloned();
    let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024)
        .await
        .unwrap_or_default();
    let mut message = String::from_utf8_lossy(&bytes).trim().to_string();
    if message.is_empty() {
        message = status
            .canonical_reason()
            .unwrap_or("Request refused")
            .to_string();
    }
    let error = AppError::Rejected(status, message);
    let mut response = if api {
        ApiError(error).into_response()
    } else {
        error.into_response()
    };
    if let Some(value) = retry_after {
        response
            .headers_mut()
            .insert(axum::http::header::RETRY_AFTER, value);
    }
    response
}

//! The web layer's one error type. Every handler returns `Result<_, AppError>`, and the
//! single `IntoResponse` below picks the status and renders the error page. Internal
//! errors are logged with their cause and shown to the student only as a generic message.

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use crate::pages::ErrorPage;

/// Everything a request can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// No page or asset at this path.
    #[error("not found: {0}")]
    NotFound(String),
    /// A page template failed to render (a bug, not the student's fault).
    #[error("template error: {0}")]
    Template(#[from] askama::Error),
}

impl AppError {
    fn status(&self) -> StatusCode {
        match self {
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Template(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = self.status();
        let (heading, detail) = match &self {
            Self::NotFound(path) => (
                "Page not found",
                format!("There is no page at {path}. The course home lists every lesson."),
            ),
            Self::Template(_) => {
                tracing::error!(error = %self, "internal error");
                (
                    "Something went wrong",
                    "The server hit an internal error and has logged it. Try again, or go back to the course home.".to_string(),
                )
            }
        };
        let page = ErrorPage::new(status.as_u16(), heading, &detail);
        match page.render() {
            Ok(html) => (status, Html(html)).into_response(),
            Err(e) => {
                tracing::error!(error = %e, "error page failed to render");
                (status, detail).into_response()
            }
        }
    }
}

//! `GET /notebooks/{file}`: the notebooks the course ships (`content/notebooks/`, read
//! and checked when the course loads), as downloads — among them the one that serves
//! this course on a free Colab GPU, linked from the home page and the first lesson.

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::web::error::AppError;
use crate::web::state::AppState;

/// The notebook named `file`, as an attachment.
pub async fn download(
    State(state): State<AppState>,
    Path(file): Path<String>,
) -> Result<Response, AppError> {
    let notebook = state
        .course
        .notebooks
        .iter()
        .find(|n| n.file == file)
        .ok_or_else(|| AppError::NotFound(format!("/notebooks/{file}")))?;
    // The name is one the course shipped (letters, digits, `-`, `.`), so it is a safe
    // header value; anything else was not found above.
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{}\"", notebook.file))
        .map_err(|_| AppError::NotFound(format!("/notebooks/{file}")))?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-ipynb+json"),
            ),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        notebook.text.clone(),
    )
        .into_response())
}

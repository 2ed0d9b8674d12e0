//! A student's own data: choose a display name, export everything stored, or reset.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::header;
use axum::response::{IntoResponse, Redirect};

use crate::db::progress::{self, StudentExport};
use crate::web::error::{ApiError, AppError};
use crate::web::extract::MAX_NAME_CHARS;
use crate::web::identity::StudentId;
use crate::web::state::AppState;

fn form_field(body: &[u8], name: &str) -> Result<Option<String>, AppError> {
    let mut value = None;
    for (key, v) in crate::web::extract::form(body)? {
        if key != name && key != "confirm" {
            return Err(AppError::BadRequest(format!("unknown form field `{key}`")));
        }
        if key == name {
            value = Some(v);
        }
    }
    Ok(value)
}

/// `POST /me/name` with `display_name`: empty clears it.
pub async fn set_name(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Redirect, AppError> {
    let name = form_field(&body, "display_name")?
        .ok_or_else(|| AppError::Invalid("the form needs a `display_name` field".into()))?;
    let name = name.trim().to_string();
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(AppError::Invalid(format!(
            "a display name has at most {MAX_NAME_CHARS} characters"
        )));
    }
    if name.chars().any(char::is_control) {
        return Err(AppError::Invalid(
            "a display name cannot contain control characters".into(),
        ));
    }
    let value = (!name.is_empty()).then_some(name);
    state
        .db
        .run(move |tx| progress::set_display_name(tx, &student.0, value.as_deref()))
        .await?;
    Ok(Redirect::to("/?saved=name#you-heading"))
}

/// `GET /me/export`: everything stored about this student, as a JSON download.
pub async fn export(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<impl IntoResponse, ApiError> {
    let data: StudentExport = state
        .db
        .run(move |tx| progress::export(tx, &student.0))
        .await?;
    Ok((
        [(
            header::CONTENT_DISPOSITION,
            "attachment; filename=\"gpulab-progress.json\"",
        )],
        Json(data),
    ))
}

/// This student's attempts and best results, as `/me/export` downloads them.
#[utoipa::path(get, path = "/api/me/progress", tag = "quizzes",
    responses((status = 200, description = "OK", body = Object)))]
pub async fn progress_json(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Json<StudentExport>, ApiError> {
    Ok(Json(
        state
            .db
            .run(move |tx| progress::export(tx, &student.0))
            .await?,
    ))
}

/// `POST /me/reset` with `confirm=yes`: deletes this student's attempts and name.
pub async fn reset(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Redirect, AppError> {
    let confirmed = crate::web::extract::form(&body)?
        .iter()
        .any(|(k, v)| k == "confirm" && v == "yes");
    if !confirmed {
        return Err(AppError::Invalid(
            "tick the confirmation box to reset your progress".into(),
        ));
    }
    state
        .db
        .run(move |tx| progress::reset(tx, &student.0))
        .await?;
    Ok(Redirect::to("/"))
}

//! The instructor's cockpit beyond the gradebook table: the live picture of the shared
//! GPU (`GET /instructor/live.json`, polled by the page), and the students themselves
//! (`POST /instructor/students/rename` and `/merge`). Every route here needs the
//! instructor's session or bearer token, like the gradebook.
//!
//! Students are named by their pseudonym (`s-…`, shown in the gradebook), never by
//! their id: the id is their cookie and must not appear in a page or a form.

use std::collections::HashMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::Redirect;

use crate::db::gradebook;
use crate::db::student_identity;
use crate::web::error::AppError;
use crate::web::extract::MAX_NAME_CHARS;
use crate::web::instructor_access::{Caller, require};
use crate::web::instructor_pages::{LiveView, live_view};
use crate::web::state::AppState;

/// `GET /instructor/live.json`: [`LiveView`], for the page to refresh itself.
pub async fn live_json(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<LiveView>, AppError> {
    require(&state, &caller)?;
    Ok(Json(live_view(&state).await?))
}

/// The form's fields, only those named in `allowed` (anything else is a 400).
fn fields(body: &[u8], allowed: &[&str]) -> Result<HashMap<String, String>, AppError> {
    let mut found = HashMap::new();
    for (key, value) in crate::web::extract::form(body)? {
        if !allowed.contains(&key.as_str()) {
            return Err(AppError::BadRequest(format!("unknown form field `{key}`")));
        }
        found.insert(key, value.trim().to_string());
    }
    Ok(found)
}

/// The student whose pseudonym is `field`'s value.
async fn student_by_pseudonym(
    state: &AppState,
    form: &HashMap<String, String>,
    field: &str,
) -> Result<String, AppError> {
    let given = form
        .get(field)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| AppError::Invalid(format!("the form needs `{field}`: a pseudonym such as s-0123456789abcdef from the gradebook")))?
        .trim_start_matches("anonymous ")
        .to_string();
    let found = state
        .db
        .run(move |tx| gradebook::student_by_pseudonym(tx, &given))
        .await?;
    found.ok_or_else(|| {
        AppError::Invalid(format!(
            "no student has the pseudonym given as `{field}`; copy it from the gradebook's Student column"
        ))
    })
}

/// `POST /instructor/students/rename` with `student` (a pseudonym) and `display_name`
/// (empty clears it).
pub async fn rename(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> Result<Redirect, AppError> {
    require(&state, &caller)?;
    let form = fields(&body, &["student", "display_name"])?;
    let name = form.get("display_name").cloned().unwrap_or_default();
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(AppError::Invalid(format!(
            "a display name has at most {MAX_NAME_CHARS} characters and no control characters"
        )));
    }
    let student = student_by_pseudonym(&state, &form, "student").await?;
    let name = (!name.is_empty()).then_some(name);
    state
        .db
        .run(move |tx| student_identity::rename(tx, &student, name.as_deref()))
        .await?;
    Ok(Redirect::to("/instructor?saved=renamed#students"))
}

/// `POST /instructor/students/merge` with `from` and `into` (pseudonyms): `from`'s
/// attempts and experiments move to `into`, and `from` is deleted.
pub async fn merge(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> Result<Redirect, AppError> {
    require(&state, &caller)?;
    let form = fields(&body, &["from", "into"])?;
    let from = student_by_pseudonym(&state, &form, "from").await?;
    let into = student_by_pseudonym(&state, &form, "into").await?;
    if from == into {
        return Err(AppError::Invalid(
            "a student cannot be merged into themselves".into(),
        ));
    }
    state
        .db
        .run(move |tx| student_identity::merge(tx, &from, &into))
        .await?;
    Ok(Redirect::to("/instructor?saved=merged#students"))
}

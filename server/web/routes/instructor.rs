//! The instructor's gradebook at `/instructor`. Enabled only when the server has an
//! instructor token; refused otherwise. The token is entered once in a form (never in a
//! URL), compared in constant time, and exchanged for a random session cookie; scripts
//! may send it as `Authorization: Bearer <token>` instead.

use std::collections::BTreeMap;

use askama::Template;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum_extra::extract::CookieJar;
use subtle::ConstantTimeEq;

use crate::db::gradebook::{self, GradeCell, MissedQuestion};
use crate::web::error::AppError;
use crate::web::identity::{private_cookie, random_token};
use crate::web::page::{GpuUseRow, GradebookRow, InstructorLoginPage, InstructorPage};
use crate::web::state::AppState;

/// Name of the instructor session cookie.
pub const SESSION_COOKIE: &str = "gpulab_instructor";

const DISABLED: &str = "The instructor gradebook is switched off on this server. Start it with GPULAB_INSTRUCTOR_TOKEN set to enable it.";

fn token(state: &AppState) -> Result<&str, AppError> {
    state
        .config
        .instructor_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| AppError::Forbidden(DISABLED.into()))
}

fn tokens_match(expected: &str, given: &str) -> bool {
    expected.as_bytes().ct_eq(given.as_bytes()).into()
}

/// Whether the request carries a valid session cookie or bearer token.
fn authorised(state: &AppState, jar: &CookieJar, headers: &HeaderMap) -> Result<bool, AppError> {
    let expected = token(state)?;
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| tokens_match(expected, given.trim()));
    let session = jar.get(SESSION_COOKIE).is_some_and(|c| {
        state
            .instructor_sessions
            .lock()
            .map(|s| s.contains(c.value()))
            .unwrap_or(false)
    });
    Ok(bearer || session)
}

fn require(state: &AppState, jar: &CookieJar, headers: &HeaderMap) -> Result<(), AppError> {
    if authorised(state, jar, headers)? {
        Ok(())
    } else {
        Err(AppError::Unauthorized(
            "Sign in at /instructor with the instructor token first.".into(),
        ))
    }
}

/// `GET /instructor`: the gradebook, or the token form.
pub async fn gradebook(
    State(state): State<AppState>,
    jar: CookieJar,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    if !authorised(&state, &jar, &headers)? {
        return Ok(Html(
            InstructorLoginPage {
                layout: &state.layout,
                error: None,
            }
            .render()?,
        )
        .into_response());
    }
    let (grades, missed, names) = state
        .db
        .run(|conn| {
            Ok((
                gradebook::grades(conn)?,
                gradebook::most_missed(conn)?,
                gradebook::display_names(conn)?,
            ))
        })
        .await?;
    let quizzes: Vec<(&str, &str)> = state
        .course
        .quizzes
        .iter()
        .map(|q| (q.id.as_str(), q.title.as_str()))
        .collect();
    let mut by_student: BTreeMap<(String, String), Vec<GradeCell>> = BTreeMap::new();
    for cell in grades {
        let name = cell
            .display_name
            .clone()
            .unwrap_or_else(|| format!("anonymous {}", &cell.student_id[..8]));
        by_student
            .entry((name, cell.student_id.clone()))
            .or_default()
            .push(cell);
    }
    let rows = by_student
        .into_iter()
        .map(|((name, _), cells)| GradebookRow {
            name,
            cells: quizzes
                .iter()
                .map(|(id, _)| cells.iter().find(|c| c.quiz_id == *id).cloned())
                .collect(),
        })
        .collect();
    let gpu_use = state
        .engine
        .usage()
        .into_iter()
        .map(|(id, usage)| GpuUseRow {
            name: names
                .get(&id)
                .cloned()
                .unwrap_or_else(|| format!("anonymous {}", id.get(..8).unwrap_or(&id))),
            playground_mib: state.engine.playgrounds.reserved_by(&id) as f64
                / f64::from(1u32 << 20),
            usage,
        })
        .collect();
    let page = InstructorPage {
        layout: &state.layout,
        quizzes,
        rows,
        missed,
        queue: state.engine.stats(),
        device: format!("{} ({})", state.engine.card.name, state.engine.card.kind),
        gpu_use,
    };
    Ok(Html(page.render()?).into_response())
}

/// `POST /instructor/login` with `token`.
pub async fn login(State(state): State<AppState>, body: Bytes) -> Result<Response, AppError> {
    let expected = token(&state)?.to_string();
    let given = crate::web::extract::form(&body)?
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
        .unwrap_or_default();
    if !tokens_match(&expected, &given) {
        tracing::warn!("instructor sign-in with a wrong token");
        let page = InstructorLoginPage {
            layout: &state.layout,
            error: Some("That token is not right.".into()),
        };
        return Ok((StatusCode::UNAUTHORIZED, Html(page.render()?)).into_response());
    }
    let session = random_token();
    if let Ok(mut sessions) = state.instructor_sessions.lock() {
        sessions.insert(session.clone());
    }
    let mut response = Redirect::to("/instructor").into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        private_cookie(SESSION_COOKIE, session, 1),
    );
    Ok(response)
}

/// `POST /instructor/logout`.
pub async fn logout(State(state): State<AppState>, jar: CookieJar) -> Redirect {
    if let (Some(cookie), Ok(mut sessions)) =
        (jar.get(SESSION_COOKIE), state.instructor_sessions.lock())
    {
        sessions.remove(cookie.value());
    }
    Redirect::to("/instructor")
}

fn csv_response(name: &str, bytes: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        bytes,
    )
        .into_response()
}

/// Rows as CSV, every cell safe to open in a spreadsheet: a cell a spreadsheet would run
/// as a formula (starting with `=`, `+`, `@`, a tab or return, or `-` when it is not a
/// number) gets a leading `'`, so a student's display name can never execute.
fn csv_bytes<T: serde::Serialize>(rows: &[T]) -> Result<Vec<u8>, AppError> {
    let fail = |e: &dyn std::fmt::Display| AppError::BadRequest(format!("csv: {e}"));
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row).map_err(|e| fail(&e))?;
    }
    let raw = writer.into_inner().map_err(|e| fail(&e))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(raw.as_slice());
    let mut safe = csv::Writer::from_writer(Vec::new());
    for record in reader.records() {
        let record = record.map_err(|e| fail(&e))?;
        safe.write_record(record.iter().map(neutralise_formula))
            .map_err(|e| fail(&e))?;
    }
    safe.into_inner().map_err(|e| fail(&e))
}

fn neutralise_formula(cell: &str) -> String {
    let risky = match cell.chars().next() {
        Some('=' | '+' | '@' | '\t' | '\r') => true,
        Some('-') => cell.parse::<f64>().is_err(),
        _ => false,
    };
    if risky {
        format!("'{cell}")
    } else {
        cell.to_string()
    }
}

/// `GET /instructor/grades.csv`: one row per student and attempted quiz.
pub async fn grades_csv(
    State(state): State<AppState>,
    jar: CookieJar,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    require(&state, &jar, &headers)?;
    let rows: Vec<GradeCell> = state.db.run(|conn| gradebook::grades(conn)).await?;
    Ok(csv_response("gpulab-grades.csv", csv_bytes(&rows)?))
}

/// `GET /instructor/missed.csv`: questions by share of wrong answers.
pub async fn missed_csv(
    State(state): State<AppState>,
    jar: CookieJar,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    require(&state, &jar, &headers)?;
    let rows: Vec<MissedQuestion> = state.db.run(|conn| gradebook::most_missed(conn)).await?;
    Ok(csv_response(
        "gpulab-missed-questions.csv",
        csv_bytes(&rows)?,
    ))
}

//! The instructor's gradebook at `/instructor`. Enabled only when the server has an
//! instructor token; refused otherwise. The token is entered once in a form (never in a
//! URL), compared in constant time, and exchanged for a random session cookie; scripts
//! may send it as `Authorization: Bearer <token>` instead.

use std::collections::BTreeMap;

use askama::Template;
use axum::body::Bytes;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Extension, FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum_extra::extract::CookieJar;

use serde::{Deserialize, Serialize};

use crate::db::gradebook::{self, GradeCell, MissedQuestion};
use crate::web::error::AppError;
use crate::web::identity::{private_cookie, random_token};
use crate::web::login_guard::tokens_match;
use crate::web::page::{GpuUseRow, GradebookRow, InstructorLoginPage, InstructorPage};
use crate::web::state::AppState;

/// Students per gradebook page.
pub const ROWS_PER_PAGE: usize = 100;

/// `?page=N` on the gradebook (1-based).
#[derive(Debug, Deserialize)]
pub struct Paging {
    page: Option<usize>,
}

/// One row of `grades.csv`: the student by pseudonym, never by id (the id is the
/// student's cookie).
#[derive(Debug, Serialize)]
struct GradeExport {
    student: String,
    display_name: Option<String>,
    quiz_id: String,
    best_percent: f64,
    attempts: u32,
    passed: bool,
}

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

/// Who is asking, as far as instructor access goes: the session cookie, a bearer token
/// and the network address (for the sign-in guard).
pub struct Caller {
    session: Option<String>,
    bearer: Option<String>,
    address: Option<IpAddr>,
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let jar = CookieJar::from_request_parts(parts, state).await?;
        Ok(Self {
            session: jar.get(SESSION_COOKIE).map(|c| c.value().to_string()),
            bearer: parts
                .headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(|t| t.trim().to_string()),
            address: crate::web::serve::peer(&parts.extensions).map(|p| p.ip()),
        })
    }
}

/// Whether the request carries a valid session cookie or bearer token. A bearer token
/// counts as a sign-in attempt for the guard, like the form.
fn authorised(state: &AppState, caller: &Caller) -> Result<bool, AppError> {
    let expected = token(state)?;
    let session = caller.session.as_ref().is_some_and(|id| {
        state
            .instructor_sessions
            .lock()
            .map(|s| s.contains(id))
            .unwrap_or(false)
    });
    if session {
        return Ok(true);
    }
    let Some(given) = &caller.bearer else {
        return Ok(false);
    };
    if let Err(wait) = state.login_guard.before_attempt(caller.address) {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        return Err(AppError::TooMany {
            retry_after_secs: secs,
            message: format!("Too many wrong tokens were tried; try again in about {secs} s."),
        });
    }
    let right = tokens_match(expected, given);
    state.login_guard.after_attempt(caller.address, right);
    Ok(right)
}

/// Whether this request comes from the signed-in instructor (false when the gradebook
/// is switched off).
pub fn is_instructor(state: &AppState, caller: &Caller) -> bool {
    authorised(state, caller).unwrap_or(false)
}

fn require(state: &AppState, caller: &Caller) -> Result<(), AppError> {
    if authorised(state, caller)? {
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
    caller: Caller,
    Query(paging): Query<Paging>,
) -> Result<Response, AppError> {
    if !authorised(&state, &caller)? {
        return Ok(Html(
            InstructorLoginPage {
                layout: &state.layout,
                error: None,
            }
            .render()?,
        )
        .into_response());
    }
    let (grades, missed, names, key) = state
        .db
        .run(|conn| {
            Ok((
                gradebook::grades(conn)?,
                gradebook::most_missed(conn)?,
                gradebook::display_names(conn)?,
                gradebook::pseudonym_key(conn)?,
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
        let name = cell.display_name.clone().unwrap_or_else(|| {
            format!("anonymous {}", gradebook::pseudonym(&key, &cell.student_id))
        });
        by_student
            .entry((name, cell.student_id.clone()))
            .or_default()
            .push(cell);
    }
    let students = by_student.len();
    let pages = students.div_ceil(ROWS_PER_PAGE).max(1);
    let page = paging.page.unwrap_or(1).clamp(1, pages);
    let rows = by_student
        .into_iter()
        .skip((page - 1) * ROWS_PER_PAGE)
        .take(ROWS_PER_PAGE)
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
                .unwrap_or_else(|| format!("anonymous {}", gradebook::pseudonym(&key, &id))),
            playground_mib: state.engine.playgrounds.reserved_by(&id) as f64
                / f64::from(1u32 << 20),
            usage,
        })
        .collect();
    let page = InstructorPage {
        layout: &state.layout,
        quizzes,
        rows,
        students,
        page,
        pages,
        missed,
        queue: state.engine.stats(),
        device: format!("{} ({})", state.engine.card.name, state.engine.card.kind),
        gpu_use,
    };
    Ok(Html(page.render()?).into_response())
}

/// `POST /instructor/login` with `token`. Wrong tokens make the sender (and, many of
/// them, everyone) wait before the next try (`web::login_guard`).
pub async fn login(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    body: Bytes,
) -> Result<Response, AppError> {
    let expected = token(&state)?.to_string();
    let address = peer.map(|Extension(ConnectInfo(p))| p.ip());
    if let Err(wait) = state.login_guard.before_attempt(address) {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        return Err(AppError::TooMany {
            retry_after_secs: secs,
            message: format!(
                "Too many wrong tokens were tried; sign-in is paused for about {secs} s."
            ),
        });
    }
    let given = crate::web::extract::form(&body)?
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
        .unwrap_or_default();
    let right = tokens_match(&expected, &given);
    state.login_guard.after_attempt(address, right);
    if !right {
        tracing::warn!(?address, "instructor sign-in with a wrong token");
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
    caller: Caller,
) -> Result<Response, AppError> {
    require(&state, &caller)?;
    let (cells, key) = state
        .db
        .run(|conn| Ok((gradebook::grades(conn)?, gradebook::pseudonym_key(conn)?)))
        .await?;
    let rows: Vec<GradeExport> = cells
        .into_iter()
        .map(|cell| GradeExport {
            student: gradebook::pseudonym(&key, &cell.student_id),
            display_name: cell.display_name,
            quiz_id: cell.quiz_id,
            best_percent: cell.best_percent,
            attempts: cell.attempts,
            passed: cell.passed,
        })
        .collect();
    Ok(csv_response("gpulab-grades.csv", csv_bytes(&rows)?))
}

/// `GET /instructor/missed.csv`: questions by share of wrong answers.
pub async fn missed_csv(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Response, AppError> {
    require(&state, &caller)?;
    let rows: Vec<MissedQuestion> = state.db.run(|conn| gradebook::most_missed(conn)).await?;
    Ok(csv_response(
        "gpulab-missed-questions.csv",
        csv_bytes(&rows)?,
    ))
}

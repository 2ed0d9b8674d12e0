//! The instructor's gradebook at `/instructor`. Enabled only when the server has an
//! instructor token; refused otherwise. The token is entered once in a form (never in a
//! URL), compared in constant time, and exchanged for a random session cookie; scripts
//! may send it as `Authorization: Bearer <token>` instead.

use askama::Template;
use axum::body::Bytes;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Extension, FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum_extra::extract::CookieJar;

use super::instructor_cockpit::{ClassData, live_view};
use crate::db::instructor_sessions;
use crate::web::error::AppError;
use crate::web::gradebook_table::{GradebookQuery, SortKey, View, quiz_figures};
use crate::web::identity::{CookiePolicy, private_cookie, random_token};
use crate::web::instructor_pages::{
    InstructorPage, gradebook_href, missed_in_course_order, sort_header, sort_param,
};
use crate::web::login_guard::tokens_match;
use crate::web::page::InstructorLoginPage;
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

/// Who is asking, as far as instructor access goes: the session cookie, a bearer token
/// and the network address (for the sign-in guard).
pub struct Caller {
    /// The session cookie names a sign-in the database knows (every web node of a
    /// class sees the same sign-ins).
    signed_in: bool,
    bearer: Option<String>,
    address: Option<IpAddr>,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let jar = CookieJar::from_request_parts(parts, state).await?;
        let signed_in = match jar.get(SESSION_COOKIE) {
            Some(cookie) => signed_in(state, cookie.value()).await,
            None => false,
        };
        Ok(Self {
            signed_in,
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
    if caller.signed_in {
        return Ok(true);
    }
    let Some(given) = &caller.bearer else {
        return Ok(false);
    };
    check_token_attempt(state, expected, given, caller.address)
}

/// Whether `given` is the instructor token. The right token is accepted at once, even
/// from an address (a class's one NAT address) where someone keeps guessing; only a wrong
/// one meets the sign-in guard: a 429 while its address (or everyone) must wait, and
/// otherwise counted as a failure.
fn check_token_attempt(
    state: &AppState,
    expected: &str,
    given: &str,
    address: Option<IpAddr>,
) -> Result<bool, AppError> {
    if tokens_match(expected, given) {
        return Ok(true);
    }
    if let Err(wait) = state.login_guard.before_attempt(address) {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        return Err(AppError::TooMany {
            retry_after_secs: secs,
            message: format!(
                "Too many wrong tokens were tried from your network address; wrong tokens are refused for about {secs} s (the right token still works)."
            ),
        });
    }
    state.login_guard.failed(address);
    Ok(false)
}

/// Whether this request comes from the signed-in instructor (false when the gradebook
/// is switched off).
pub fn is_instructor(state: &AppState, caller: &Caller) -> bool {
    authorised(state, caller).unwrap_or(false)
}

/// `Ok` for the signed-in instructor; 401 otherwise (403 when the gradebook is off), for
/// every instructor route but the gradebook page, which shows the sign-in form instead.
pub(crate) fn require(state: &AppState, caller: &Caller) -> Result<(), AppError> {
    if authorised(state, caller)? {
        Ok(())
    } else {
        Err(AppError::Unauthorized(
            "Sign in at /instructor with the instructor token first.".into(),
        ))
    }
}

/// `GET /instructor`: the gradebook, or the token form. Sorting, filtering and paging
/// come as query parameters (see [`GradebookQuery`]); unknown values are a 400 that
/// names what is accepted.
pub async fn gradebook(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<GradebookQuery>,
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
    // Quiz columns, then one column per tuning lab (best score, attempts, passed).
    let lab_columns: Vec<(String, &str)> = crate::experiments::labs::ALL
        .iter()
        .map(|id| {
            let name = serde_json::to_value(id).unwrap_or_default();
            (
                crate::db::lab_attempts::column(name.as_str().unwrap_or("")),
                crate::experiments::labs::lab(*id).title,
            )
        })
        .collect();
    let quiz_ids: Vec<&str> = state
        .course
        .quizzes
        .iter()
        .map(|q| q.id.as_str())
        .chain(lab_columns.iter().map(|(id, _)| id.as_str()))
        .collect();
    let view = View::parse(&query, &quiz_ids)?;
    let class = ClassData::load(&state).await?;
    let all_rows = class.rows(&quiz_ids);
    let figures = quiz_figures(&all_rows, quiz_ids.len());
    let students = all_rows.len();
    let (rows, matched, page, pages) = view.apply(all_rows);
    let mut headers = vec![
        sort_header(
            &view,
            SortKey::Active,
            "Last active",
            "Latest quiz attempt or experiment",
            &quiz_ids,
        ),
        sort_header(
            &view,
            SortKey::Stuck,
            "Stuck",
            "Several attempts at a quiz and no pass",
            &quiz_ids,
        ),
    ];
    let titles = state
        .course
        .quizzes
        .iter()
        .map(|quiz| (quiz.id.as_str(), quiz.title.as_str()))
        .chain(lab_columns.iter().map(|(id, title)| (id.as_str(), *title)));
    headers.extend(
        titles
            .enumerate()
            .map(|(i, (id, title))| sort_header(&view, SortKey::Quiz(i), id, title, &quiz_ids)),
    );
    let sort = sort_param(&view.sort, &quiz_ids);
    let notice = match query.saved.as_deref() {
        Some("renamed") => Some("The student is renamed.".to_string()),
        Some("merged") => Some(
            "The students are merged: every attempt is kept and best scores are recomputed."
                .to_string(),
        ),
        _ => None,
    };
    let page = InstructorPage {
        layout: &state.layout,
        name_header: sort_header(
            &view,
            SortKey::Name,
            "Student",
            "Display name or pseudonym",
            &quiz_ids,
        ),
        headers,
        rows,
        figures,
        students,
        matched,
        prev_href: (page > 1).then(|| gradebook_href(&view, &sort, view.descending, page - 1)),
        next_href: (page < pages).then(|| gradebook_href(&view, &sort, view.descending, page + 1)),
        page,
        pages,
        filter: query.q.clone().unwrap_or_default(),
        stuck_only: view.stuck_only,
        sort,
        dir: if view.descending { "desc" } else { "asc" },
        missed: missed_in_course_order(&state.course, class.missed),
        live: live_view(&state).await?,
        round: {
            crate::web::class_round::current(&state)
                .await?
                .as_ref()
                .map(super::class_round::instructor_view)
        },
        round_choices: crate::experiments::REGISTRY
            .iter()
            .map(|e| (e.name(), e.title()))
            .collect(),
        predictions: {
            let rows = state.db.run(crate::db::predictions::all).await?;
            crate::web::calibration::class_views(&rows, &state.course.predictions)
                .into_iter()
                .map(crate::web::calibration::strip)
                .collect()
        },
        notice,
        script: state.assets.url("js/instructor.js"),
    };
    Ok(Html(page.render()?).into_response())
}

/// `POST /instructor/login` with `token`. The right token always signs in; wrong tokens
/// make the sender (and, many of them, everyone) wait before their next wrong try
/// (`web::login_guard`).
pub async fn login(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    body: Bytes,
) -> Result<Response, AppError> {
    let expected = token(&state)?.to_string();
    let address = peer.map(|Extension(ConnectInfo(p))| p.ip());
    let given = crate::web::extract::form(&body)?
        .into_iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v)
        .unwrap_or_default();
    let right = check_token_attempt(&state, &expected, &given, address)?;
    if !right {
        tracing::warn!(?address, "instructor sign-in with a wrong token");
        let page = InstructorLoginPage {
            layout: &state.layout,
            error: Some("That token is not right.".into()),
        };
        return Ok((StatusCode::UNAUTHORIZED, Html(page.render()?)).into_response());
    }
    let session = random_token();
    let key = session_key(&session);
    state
        .db
        .run(move |tx| instructor_sessions::sign_in(tx, &key))
        .await?;
    let mut response = Redirect::to("/instructor").into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        private_cookie(SESSION_COOKIE, session, 1, CookiePolicy::of(&state.config)),
    );
    Ok(response)
}

/// `POST /instructor/logout`.
pub async fn logout(State(state): State<AppState>, jar: CookieJar) -> Redirect {
    if let Some(cookie) = jar.get(SESSION_COOKIE) {
        let key = session_key(cookie.value());
        let signed_out = state
            .db
            .run(move |tx| instructor_sessions::sign_out(tx, &key))
            .await;
        if let Err(error) = signed_out {
            tracing::warn!(%error, "could not end the instructor session");
        }
    }
    Redirect::to("/instructor")
}

/// What the database keeps of a session: its SHA-256, so reading the table signs no one in.
fn session_key(session: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(session.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `session` is signed in (on any web node of the class).
async fn signed_in(state: &AppState, session: &str) -> bool {
    let key = session_key(session);
    state
        .db
        .run(move |tx| instructor_sessions::is_signed_in(tx, &key))
        .await
        .unwrap_or(false)
}

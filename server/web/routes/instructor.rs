//! The instructor's gradebook at `/instructor`. Enabled only when the server has an
//! instructor token; refused otherwise. The token is entered once in a form (never in a
//! URL), compared in constant time, and exchanged for a random session cookie; scripts
//! may send it as `Authorization: Bearer <token>` instead.

use askama::Template;
use axum::body::Bytes;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Extension, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum_extra::extract::CookieJar;

use crate::classroom::gradebook::ClassData;
use crate::classroom::gradebook::{GradebookQuery, SortKey, View, quiz_figures};
use crate::db::instructor_sessions;
use crate::web::error::AppError;
use crate::web::identity::{CookiePolicy, private_cookie, random_token};
use crate::web::instructor_access::{
    Caller, SESSION_COOKIE, authorised, check_token_attempt, session_key, token,
};
use crate::web::instructor_pages::live_view;
use crate::web::instructor_pages::{
    InstructorPage, gradebook_href, missed_in_course_order, sort_header, sort_param,
};
use crate::web::page::InstructorLoginPage;
use crate::web::state::AppState;

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
            (
                crate::db::lab_attempts::column(id.name()),
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
    let class = ClassData::load(&state.classroom).await?;
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
            crate::classroom::round::current(&state.classroom)
                .await?
                .as_ref()
                .map(crate::classroom::round::instructor_view)
        },
        round_choices: crate::classroom::round::choices(),
        predictions: {
            let rows = state.db.run(crate::db::predictions::all).await?;
            crate::classroom::calibration::class_views(&rows, &state.course.predictions)
                .into_iter()
                .map(crate::classroom::calibration::strip)
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

//! Progress on another browser: a learner asks for a resume code on the home page
//! (`POST /me/resume-code`), and types it into another browser (`POST /me/resume`),
//! which then carries the same student cookie. Both are student writes (they need the
//! cookie a page gave, like every other write). Wrong codes are slowed down per address
//! (`web::login_guard::LoginGuard::per_address`, IPv6 per /64) on top of the 60 random
//! bits a code carries; a right code is always taken, and resuming does not count
//! against the address's write budget, so a student guessing behind the class's NAT
//! address cannot stop the others at that address from resuming, and there is no
//! class-wide lockout.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, Extension, State};
use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};

use crate::db::student_identity::{self, normalise_code};
use crate::web::error::AppError;
use crate::web::identity::{CookiePolicy, STUDENT_COOKIE, StudentId, private_cookie};
use crate::web::state::AppState;

/// `POST /me/resume-code`: makes this student's resume code (once) and shows it.
pub async fn make_code(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Redirect, AppError> {
    state
        .db
        .run(move |tx| student_identity::ensure_resume_code(tx, &student.0))
        .await?;
    Ok(Redirect::to("/#resume-heading"))
}

/// `POST /me/resume` with `code`: this browser becomes the student the code belongs to.
pub async fn resume(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    body: Bytes,
) -> Result<Response, AppError> {
    let address = peer.map(|Extension(ConnectInfo(p))| p.ip());
    let mut typed = None;
    for (key, value) in crate::web::extract::form(&body)? {
        if key != "code" {
            return Err(AppError::BadRequest(format!("unknown form field `{key}`")));
        }
        typed = Some(value);
    }
    let typed = typed.ok_or_else(|| AppError::Invalid("the form needs a `code` field".into()))?;
    let code = normalise_code(&typed).ok_or_else(|| {
        AppError::Invalid(
            "a resume code has 12 letters and digits, like ABCD-EFGH-JKMN; check it and try again"
                .into(),
        )
    })?;
    let found = state
        .db
        .run(move |tx| student_identity::student_for_code(tx, &code))
        .await?;
    // A right code always works, even while someone at this address (a class's NAT
    // address) keeps guessing; only wrong codes meet the guard.
    let Some(student) = found else {
        if let Err(wait) = state.resume_guard.before_attempt(address) {
            let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
            return Err(AppError::TooMany {
                retry_after_secs: secs,
                message: format!(
                    "Too many wrong resume codes were tried from your network address; wrong codes are refused for about {secs} s (a right code still works)."
                ),
            });
        }
        state.resume_guard.failed(address);
        return Err(AppError::Invalid(
            "no progress has that resume code; check it on the browser you started on (its home page shows it)".into(),
        ));
    };
    let mut response = Redirect::to("/?resumed=1#you-heading").into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        private_cookie(
            STUDENT_COOKIE,
            student,
            365,
            CookiePolicy::of(&state.config),
        ),
    );
    Ok(response)
}

//! Who may use the instructor's routes: the instructor token (never in a URL, compared
//! in constant time; a wrong one meets the sign-in guard), exchanged at sign-in for a
//! random session cookie whose SHA-256 the database keeps ([`instructor_sessions`], so
//! every web node of a class knows it), or sent by scripts as `Authorization: Bearer`.
//! Every instructor route takes a [`Caller`] and asks [`require`] (or
//! [`is_instructor`]); `routes::instructor` signs in and out.

use std::net::IpAddr;

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use axum_extra::extract::CookieJar;

use crate::db::instructor_sessions;
use crate::web::error::AppError;
use crate::web::login_guard::tokens_match;
use crate::web::state::AppState;

/// Name of the instructor session cookie.
pub const SESSION_COOKIE: &str = "gpulab_instructor";

const DISABLED: &str = "The instructor gradebook is switched off on this server. Start it with GPULAB_INSTRUCTOR_TOKEN set to enable it.";

pub(crate) fn token(state: &AppState) -> Result<&str, AppError> {
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
            address: crate::web::identity::peer(&parts.extensions).map(|p| p.ip()),
        })
    }
}

/// Whether the request carries a valid session cookie or bearer token. A bearer token
/// counts as a sign-in attempt for the guard, like the form.
pub(crate) fn authorised(state: &AppState, caller: &Caller) -> Result<bool, AppError> {
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
pub(crate) fn check_token_attempt(
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

/// What the database keeps of a session: its SHA-256, so reading the table signs no one in.
pub(crate) fn session_key(session: &str) -> String {
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

//! `GET /static/{*path}`: embedded files with their content type, a strong ETag and a
//! cache lifetime. A matching `If-None-Match` gets `304 Not Modified`. Paths are looked
//! up in the embedded table only, so `..` can never reach the file system.

use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderValue;
use axum::response::Response;

use crate::web::encoded::CacheHeaders;
use crate::web::error::AppError;
use crate::web::state::AppState;

/// Pages link assets with `?v=<hash>`: such a URL never changes content, so browsers
/// may keep it for a year.
const CACHE_VERSIONED: &str = "public, max-age=31536000, immutable";
/// Modules imported by relative path carry no hash: revalidate them (cheaply, by ETag)
/// on every use so a new build never mixes with stale scripts.
const CACHE_UNVERSIONED: &str = "no-cache";

/// Serves one embedded asset.
pub async fn asset(
    State(state): State<AppState>,
    Path(path): Path<String>,
    RawQuery(query): RawQuery,
    headers: CacheHeaders,
) -> Result<Response, AppError> {
    let asset = state
        .assets
        .get(&path)
        .ok_or_else(|| AppError::NotFound(format!("/static/{path}")))?;
    Ok(asset.respond(
        &headers,
        HeaderValue::from_static(cache_control(query.as_deref())),
    ))
}

/// The cache lifetime for a request: long for hashed URLs, revalidate otherwise.
fn cache_control(query: Option<&str>) -> &'static str {
    let versioned = query.is_some_and(|q| q.split('&').any(|pair| pair.starts_with("v=")));
    if versioned {
        CACHE_VERSIONED
    } else {
        CACHE_UNVERSIONED
    }
}

//! `GET /static/{*path}`: embedded files with their content type, a strong ETag and a
//! cache lifetime. A matching `If-None-Match` gets `304 Not Modified`. Paths are looked
//! up in the embedded table only, so `..` can never reach the file system.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::app::AppState;
use crate::error::AppError;

/// Browsers may reuse an asset for an hour, then revalidate with its ETag; pages link
/// assets with `?v=<hash>`, so a new build is picked up at once anyway.
const CACHE_CONTROL: &str = "public, max-age=3600";

/// Serves one embedded asset.
pub async fn asset(
    State(state): State<AppState>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let asset = state
        .assets
        .get(&path)
        .ok_or_else(|| AppError::NotFound(format!("/static/{path}")))?;
    let etag_matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim() == asset.etag || t.trim() == "*")
        });
    let common = [
        (header::ETAG, asset.etag.clone()),
        (header::CACHE_CONTROL, CACHE_CONTROL.to_string()),
    ];
    if etag_matches {
        return Ok((StatusCode::NOT_MODIFIED, common).into_response());
    }
    Ok((
        common,
        [(header::CONTENT_TYPE, asset.content_type.clone())],
        asset.bytes.clone(),
    )
        .into_response())
}

//! The allocator playground and memory snapshot (lesson 7). Each student (by cookie)
//! has a capped pool of real memory; these handlers allocate and free named tensors,
//! empty the cache and reset, answering with the three bars' numbers every time.

use axum::Json;
use axum::body::Bytes;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Extension, Path, RawQuery, State};
use serde::Deserialize;

use crate::playground::pool::Source;
use crate::playground::{PlaygroundView, Snapshot, snapshot};
use crate::web::error::{ApiError, AppError, ErrorBody};
use crate::web::identity::StudentId;
use crate::web::state::AppState;

/// NVML and driver view of GPU memory, or host memory on the CPU backend.
#[utoipa::path(get, path = "/api/memory", tag = "memory",
    responses((status = 200, description = "OK", body = Snapshot)))]
pub async fn memory(State(state): State<AppState>) -> Json<Snapshot> {
    let playgrounds = state.engine.playgrounds.clone();
    let snap = tokio::task::spawn_blocking(move || snapshot(playgrounds.source())).await;
    Json(snap.unwrap_or_else(|_| snapshot(&Source::Host)))
}

/// This student's pool.
#[utoipa::path(get, path = "/api/playground", tag = "playground",
    responses((status = 200, description = "OK", body = PlaygroundView)))]
pub async fn view(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Json<PlaygroundView> {
    let playgrounds = state.engine.playgrounds.clone();
    Json(off_async(move || playgrounds.view_of(&student.0)).await)
}

/// Runs `work` (driver and NVML calls, which can block) on the blocking pool, so the
/// async threads keep serving pages meanwhile.
async fn off_async<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(value) => value,
        Err(join) => std::panic::resume_unwind(join.into_panic()),
    }
}

/// A tensor to allocate.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AllocRequest {
    /// 1 to 32 letters, digits or underscores.
    #[schema(pattern = "^[A-Za-z0-9_]{1,32}$")]
    name: String,
    /// Size in MiB (fractions allowed).
    #[schema(exclusive_minimum = 0)]
    mib: f64,
}

fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Allocate a named tensor in this student's caching pool.
#[utoipa::path(post, path = "/api/playground/tensors", tag = "playground",
    request_body = AllocRequest,
    responses(
        (status = 200, description = "OK", body = PlaygroundView),
        (status = 400, description = "Not JSON of that shape", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 422, description = "Bad name or size, or out of memory (worded like PyTorch's error; the playground is unchanged)", body = ErrorBody),
    ))]
pub async fn allocate(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    body: Bytes,
) -> Result<Json<PlaygroundView>, ApiError> {
    let request: AllocRequest =
        crate::web::extract::json(&body, r#"{"name": "weights", "mib": 64}"#)?;
    if !valid_name(&request.name) {
        return Err(AppError::Invalid(
            "a tensor name is 1 to 32 letters, digits or underscores".into(),
        )
        .into());
    }
    let cap_mib = state.engine.limits.playground_mib_per_student as f64;
    if !(request.mib > 0.0 && request.mib <= cap_mib * 4.0) {
        return Err(AppError::Invalid(format!(
            "mib must be a positive number of MiB (your playground holds {cap_mib} MiB)"
        ))
        .into());
    }
    let bytes = (request.mib * (1 << 20) as f64).ceil() as u64;
    let playgrounds = state.engine.playgrounds.clone();
    let (outcome, view) = tokio::task::spawn_blocking(move || {
        let address = peer.map(|Extension(ConnectInfo(p))| p.ip());
        playgrounds.with(&student.0, address, |pool, room| {
            pool.allocate(&request.name, bytes, room)
        })
    })
    .await
    .map_err(|e| AppError::BadRequest(format!("allocation failed: {e}")))?;
    outcome.map_err(|e| AppError::Invalid(e.to_string()))?;
    Ok(Json(view))
}

/// `del name`: free a tensor (its block returns to the pool's cache).
#[utoipa::path(delete, path = "/api/playground/tensors/{name}", tag = "playground",
    params(
        ("name" = String, Path, description = "The tensor's name"),
        ("predict" = Option<f64>, Query, description = "The learner's prediction of `reserved` after the free, in MiB: the answer then carries `measured` and `prediction` (the score), and the prediction is stored"),
    ),
    responses(
        (status = 200, description = "OK", body = PlaygroundView),
        (status = 400, description = "A query parameter other than `predict`", body = ErrorBody),
        (status = 404, description = "Not a tensor path", body = ErrorBody),
        (status = 422, description = "No tensor of that name, or `predict` not a number from 0 to 1e12", body = ErrorBody),
    ))]
pub async fn free(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<serde_json::Value>, ApiError> {
    let predicted = super::experiments::predict_query(query.as_deref())?;
    let playgrounds = state.engine.playgrounds.clone();
    let (owner, tensor) = (student.0.clone(), name.clone());
    let (outcome, view) =
        off_async(move || playgrounds.with(&owner, None, |pool, _| pool.free(&tensor))).await;
    outcome.map_err(|e| AppError::Invalid(e.to_string()))?;
    let mut body = serde_json::to_value(&view).unwrap_or_default();
    // Predicted before the `del`: scored against what `reserved` shows after it, and
    // stored before the answer (a 2xx means it is on record).
    if let (Some(predicted), Some(fields)) = (predicted, body.as_object_mut()) {
        let quantity = &crate::experiments::prediction::PLAYGROUND.quantity;
        let measured = view.pool.reserved_bytes as f64 / (1024.0 * 1024.0);
        let score = crate::experiments::prediction::score(predicted, measured, quantity.scale);
        let row = crate::db::predictions::PredictionRow {
            student_id: student.0.clone(),
            experiment: crate::experiments::prediction::PLAYGROUND.name.into(),
            quantity: quantity.key.into(),
            params: serde_json::json!({ "freed": name }).to_string(),
            predicted,
            measured,
            unit: quantity.unit.into(),
            backend: state.engine.card.kind.to_string(),
            device: state.engine.card.name.clone(),
        };
        state
            .db
            .run(move |conn| crate::db::predictions::record(conn, &row))
            .await
            .map_err(AppError::from)?;
        fields.insert(
            "measured".into(),
            serde_json::json!({ "quantity": quantity.key, "value": measured, "unit": quantity.unit, "scale": quantity.scale }),
        );
        fields.insert("prediction".into(), serde_json::json!(score));
    }
    Ok(Json(body))
}

/// `torch.cuda.empty_cache()`: hand the cached blocks back.
#[utoipa::path(post, path = "/api/playground/empty-cache", tag = "playground",
    responses((status = 200, description = "OK", body = PlaygroundView)))]
pub async fn empty_cache(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Json<PlaygroundView> {
    let playgrounds = state.engine.playgrounds.clone();
    Json(
        off_async(move || {
            playgrounds
                .with(&student.0, None, |pool, _| pool.empty_cache())
                .1
        })
        .await,
    )
}

/// Drop every tensor and cached block.
#[utoipa::path(post, path = "/api/playground/reset", tag = "playground",
    responses((status = 200, description = "OK", body = PlaygroundView)))]
pub async fn reset(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Json<PlaygroundView> {
    let playgrounds = state.engine.playgrounds.clone();
    Json(off_async(move || playgrounds.reset(&student.0)).await)
}

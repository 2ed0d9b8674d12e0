//! The allocator playground and memory snapshot (lesson 7). Each student (by cookie)
//! has a capped pool of real memory; these handlers allocate and free named tensors,
//! empty the cache and reset, answering with the three bars' numbers every time.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use serde::Deserialize;

use crate::app::AppState;
use crate::error::{ApiError, AppError};
use crate::gpu::memory::{PlaygroundView, Snapshot, snapshot};
use crate::identity::StudentId;

/// `GET /api/memory`: NVML and driver view of GPU memory, or host memory on the CPU.
pub async fn memory(State(state): State<AppState>) -> Json<Snapshot> {
    let playgrounds = state.engine.playgrounds.clone();
    let snap = tokio::task::spawn_blocking(move || snapshot(playgrounds.source())).await;
    Json(snap.unwrap_or_else(|_| snapshot(&crate::gpu::pool::Source::Host)))
}

/// `GET /api/playground`: this student's pool.
pub async fn view(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Json<PlaygroundView> {
    Json(state.engine.playgrounds.with(&student.0, |_, _| ()).1)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllocRequest {
    name: String,
    mib: f64,
}

fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// `POST /api/playground/tensors` with `{"name": "x", "mib": 64}`.
pub async fn allocate(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Json<PlaygroundView>, ApiError> {
    let request: AllocRequest = super::body::json(&body, r#"{"name": "weights", "mib": 64}"#)?;
    if !valid_name(&request.name) {
        return Err(AppError::Invalid(
            "a tensor name is 1 to 32 letters, digits or underscores".into(),
        )
        .into());
    }
    let cap_mib = state.engine.limits.playground_per_student_bytes as f64 / (1 << 20) as f64;
    if !(request.mib > 0.0 && request.mib <= cap_mib * 4.0) {
        return Err(AppError::Invalid(format!(
            "mib must be a positive number of MiB (your playground holds {cap_mib} MiB)"
        ))
        .into());
    }
    let bytes = (request.mib * (1 << 20) as f64).ceil() as u64;
    let playgrounds = state.engine.playgrounds.clone();
    let (outcome, view) = tokio::task::spawn_blocking(move || {
        playgrounds.with(&student.0, |pool, room| {
            pool.allocate(&request.name, bytes, room)
        })
    })
    .await
    .map_err(|e| AppError::BadRequest(format!("allocation failed: {e}")))?;
    outcome.map_err(AppError::Invalid)?;
    Ok(Json(view))
}

/// `DELETE /api/playground/tensors/{name}`: `del name` (the block stays cached).
pub async fn free(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    Path(name): Path<String>,
) -> Result<Json<PlaygroundView>, ApiError> {
    let (outcome, view) = state
        .engine
        .playgrounds
        .with(&student.0, |pool, _| pool.free(&name));
    outcome.map_err(AppError::Invalid)?;
    Ok(Json(view))
}

/// `POST /api/playground/empty-cache`: `torch.cuda.empty_cache()`.
pub async fn empty_cache(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Json<PlaygroundView> {
    Json(
        state
            .engine
            .playgrounds
            .with(&student.0, |pool, _| pool.empty_cache())
            .1,
    )
}

/// `POST /api/playground/reset`: drop every tensor and cached block.
pub async fn reset(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Json<PlaygroundView> {
    Json(state.engine.playgrounds.reset(&student.0))
}

//! The allocator playground and memory snapshot (lesson 7). Each student (by cookie)
//! has a capped pool of real memory; these handlers allocate and free named tensors,
//! empty the cache, reset, switch the allocator's options and download the memory_viz
//! snapshot, answering with the counters and segments every time.

use axum::Json;
use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Extension, Path, RawQuery, State};
use serde::Deserialize;

use serde_json::Value;

use crate::classroom::predictions;
use crate::playground::allocator::AllocConf;
use crate::playground::remote::{Call, RemoteError, Reply};
use crate::playground::{PlaygroundView, Snapshot};
use crate::web::error::{ApiError, AppError, ErrorBody};
use crate::web::identity::StudentId;
use crate::web::state::AppState;

/// NVML and driver view of GPU memory, or host memory on the CPU backend.
#[utoipa::path(get, path = "/api/memory", tag = "memory",
    responses((status = 200, description = "OK", body = Snapshot)))]
pub async fn memory(
    State(state): State<AppState>,
    student: Option<Extension<StudentId>>,
) -> Result<Json<Value>, ApiError> {
    // With separate workers: the device holding this student's playground, if any.
    let student = student.map(|Extension(s)| s.0).unwrap_or_default();
    Ok(Json(run_call(&state, &student, Call::Memory).await?.body))
}

/// This student's pool.
#[utoipa::path(get, path = "/api/playground", tag = "playground",
    responses((status = 200, description = "OK", body = PlaygroundView)))]
pub async fn view(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(run_call(&state, &student.0, Call::View).await?.body))
}

/// Runs a playground call wherever this student's playground lives (decided once at
/// start-up: [`crate::playground::remote::Home`]).
async fn run_call(state: &AppState, student: &str, call: Call) -> Result<Reply, ApiError> {
    state
        .engine
        .playground
        .call(student, call)
        .await
        .map_err(|e| match e {
            RemoteError::Db(e) => AppError::from(e).into(),
            other => AppError::Unavailable(other.to_string()).into(),
        })
}

/// The body of a change, or its error (the playground is then unchanged).
fn changed(reply: Reply) -> Result<Value, ApiError> {
    match reply.error {
        Some(error) => Err(AppError::Invalid(error).into()),
        None => Ok(reply.body),
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
) -> Result<Json<Value>, ApiError> {
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
    crate::web::guard::refuse_new_work_unless_writable(&state.db, "New playground allocations")
        .await?;
    let bytes = (request.mib * (1 << 20) as f64).ceil() as u64;
    let address = peer.map(|Extension(ConnectInfo(p))| p.ip());
    let call = Call::Allocate {
        name: request.name,
        bytes,
        address,
    };
    Ok(Json(changed(run_call(&state, &student.0, call).await?)?))
}

/// `del name`: free a tensor (its block returns to the pool's cache).
#[utoipa::path(delete, path = "/api/playground/tensors/{name}", tag = "playground",
    params(
        ("name" = String, Path, description = "The tensor's name"),
        ("predict" = Option<f64>, Query, description = "The learner's prediction of reserved-but-unallocated memory after the free, in MiB: the answer then carries `measured` and `prediction` (the score), and the prediction is stored"),
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
    let predicted = crate::web::extract::predict_query(query.as_deref())?;
    let reply = run_call(&state, &student.0, Call::Free { name: name.clone() }).await?;
    let body = changed(reply)?;
    // Predicted before the `del`: scored against reserved minus allocated after it, and
    // stored before the answer (a 2xx means it is on record).
    Ok(Json(match predicted {
        Some(predicted) => serde_json::to_value(
            predictions::score_free(&state.classroom, &student.0, &name, predicted, body)
                .await
                .map_err(AppError::from)?,
        )
        .unwrap_or_default(),
        None => body,
    }))
}

/// `torch.cuda.empty_cache()`: hand the cached blocks back.
#[utoipa::path(post, path = "/api/playground/empty-cache", tag = "playground",
    responses((status = 200, description = "OK", body = PlaygroundView)))]
pub async fn empty_cache(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(
        run_call(&state, &student.0, Call::EmptyCache).await?.body,
    ))
}

/// Drop every tensor and cached block.
#[utoipa::path(post, path = "/api/playground/reset", tag = "playground",
    responses((status = 200, description = "OK", body = PlaygroundView)))]
pub async fn reset(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(run_call(&state, &student.0, Call::Reset).await?.body))
}

/// The allocator's options, as `PYTORCH_CUDA_ALLOC_CONF` sets them.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfRequest {
    /// `expandable_segments:True`.
    #[serde(default)]
    expandable_segments: bool,
    /// `max_split_size_mb:N`: at least 20 (PyTorch's minimum since the check moved to
    /// `c10/core/AllocatorConfig.cpp`), at most 1048576; null for no limit.
    #[serde(default)]
    max_split_size_mb: Option<u64>,
}

/// Start the playground over with other allocator options, as a new Python process
/// with `PYTORCH_CUDA_ALLOC_CONF` set would (every tensor is dropped).
#[utoipa::path(post, path = "/api/playground/config", tag = "playground",
    request_body = ConfRequest,
    responses(
        (status = 200, description = "OK: the fresh playground", body = PlaygroundView),
        (status = 400, description = "Not JSON of that shape", body = ErrorBody),
        (status = 422, description = "max_split_size_mb under 20 or past 1048576", body = ErrorBody),
    ))]
pub async fn configure(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let request: ConfRequest = crate::web::extract::json(
        &body,
        r#"{"expandable_segments": true, "max_split_size_mb": null}"#,
    )?;
    if let Some(mb) = request.max_split_size_mb
        && !(20..=1 << 20).contains(&mb)
    {
        return Err(AppError::Invalid(
            "max_split_size_mb must be at least 20 (PyTorch refuses smaller values) and at most 1048576, or null"
                .into(),
        )
        .into());
    }
    let conf = AllocConf {
        expandable_segments: request.expandable_segments,
        max_split_size_mb: request.max_split_size_mb,
    };
    Ok(Json(
        run_call(&state, &student.0, Call::Configure { conf })
            .await?
            .body,
    ))
}

/// This student's playground as a memory snapshot: the pickle that
/// `torch.cuda.memory._dump_snapshot()` writes, which pytorch.org/memory_viz opens.
#[utoipa::path(get, path = "/api/playground/snapshot", tag = "playground",
    responses((status = 200, description = "A pickled snapshot (segments, blocks, device_traces)", content_type = "application/octet-stream")))]
pub async fn snapshot(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<impl IntoResponse, ApiError> {
    let reply = run_call(&state, &student.0, Call::Snapshot).await?;
    let pickle = crate::playground::allocator::snapshot::to_pickle(&reply.body);
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"allocator_playground_snapshot.pickle\"",
            ),
        ],
        pickle,
    ))
}

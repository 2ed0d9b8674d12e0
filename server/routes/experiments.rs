//! Live experiments over HTTP. Reading the device card or the start-up doctor report is
//! instant; an experiment is queued and answered with `202 Accepted`, a job id and its
//! queue position, and the browser polls `/api/jobs/{id}` until it is done. A full
//! queue answers `429 Too Many Requests` with `Retry-After`; sizes above the server's
//! caps answer 422 with the cap in the message.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::app::AppState;
use crate::error::{ApiError, AppError};
use crate::gpu::Experiment;
use crate::gpu::queue::Refused;
use crate::gpu::transfer::{MIN_BYTES, TransferParams};
use crate::identity::StudentId;

/// `GET /api/device`: the device card (`device.kind` is `cuda` or `cpu`), the queue's
/// depth and this server's caps, so a page can bound its controls like the server does.
pub async fn device(State(state): State<AppState>) -> Json<serde_json::Value> {
    let limits = &state.engine.limits;
    Json(json!({
        "device": *state.engine.card,
        "queue_depth": state.engine.queue_depth(),
        "limits": {
            "queue_capacity": limits.queue_capacity,
            "job_timeout_secs": limits.job_timeout.as_secs(),
            "max_transfer_bytes": limits.max_transfer_bytes,
            "min_transfer_bytes": MIN_BYTES,
            "max_matmul_size": limits.max_matmul_size,
            "max_train_steps": limits.max_train_steps,
            "max_hidden": limits.max_hidden,
            "max_batch": crate::gpu::train::DATASET,
            "playground_per_student_bytes": limits.playground_per_student_bytes,
            "playground_total_bytes": limits.playground_total_bytes,
        },
    }))
}

/// `GET /api/doctor`: the layered check taken when the server started.
pub async fn doctor(State(state): State<AppState>) -> Json<crate::gpu::doctor::Report> {
    Json((*state.engine.doctor).clone())
}

use super::body::json as parse;

fn too_many(retry_after_secs: u64, message: String) -> Response {
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        Json(json!({ "error": { "status": 429, "message": message } })),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}

fn accepted(
    state: &AppState,
    student: &StudentId,
    experiment: Experiment,
) -> Result<Response, ApiError> {
    if let Err(wait) = state.experiment_limiter.check(&student.0) {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        state.metrics.rejected("rate_limited");
        return Ok(too_many(
            secs,
            format!(
                "You have started {} experiments in the last minute, the most one student may while the class shares the GPU. Try again in about {secs} s.",
                state.config.experiments_per_minute
            ),
        ));
    }
    match state.engine.submit(&student.0, experiment) {
        Ok((id, position)) => Ok((
            StatusCode::ACCEPTED,
            [(header::LOCATION, format!("/api/jobs/{id}"))],
            Json(json!({
                "job_id": id,
                "status": "queued",
                "position": position,
                "estimated_wait_secs": state.engine.estimated_wait_secs().round(),
                "poll": format!("/api/jobs/{id}"),
            })),
        )
            .into_response()),
        Err(Refused::Full { retry_after_secs }) => Ok(too_many(
            retry_after_secs,
            format!(
                "The experiment queue is full: the GPU is busy with other students' experiments. Try again in about {retry_after_secs} s."
            ),
        )),
        Err(Refused::Closed) => Err(AppError::Unavailable(
            "The server is shutting down and takes no new experiments. Try again in a minute."
                .into(),
        )
        .into()),
    }
}

/// `POST /api/experiments/transfer` with `{"max_bytes": …}`.
pub async fn transfer(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let params: TransferParams = parse(&body, r#"{"max_bytes": 1073741824}"#)?;
    let cap = state.engine.limits.max_transfer_bytes;
    if params.max_bytes < MIN_BYTES || params.max_bytes > cap {
        return Err(AppError::Invalid(format!(
            "max_bytes must be between {MIN_BYTES} and {cap} (this server's cap)"
        ))
        .into());
    }
    accepted(&state, &student, Experiment::Transfer(params))
}

/// `GET /api/jobs/{id}`: queued (with position), running, done (with result) or failed.
pub async fn job(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id: u64 = id
        .parse()
        .map_err(|_| AppError::BadRequest(format!("job ids are whole numbers, not `{id}`")))?;
    let job = state
        .engine
        .job(id)
        .ok_or_else(|| AppError::NotFound(format!("/api/jobs/{id}")))?;
    let mut body = serde_json::to_value(job).unwrap_or_default();
    body["job_id"] = json!(id);
    Ok(Json(body))
}

/// `POST /api/experiments/matmul` with `{"max_size": …}`.
pub async fn matmul(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let params: crate::gpu::matmul::MatmulParams = parse(&body, r#"{"max_size": 4096}"#)?;
    let cap = state.engine.limits.max_matmul_size;
    if params.max_size < 16 || params.max_size > cap {
        return Err(AppError::Invalid(format!(
            "max_size must be between 16 and {cap} (this server's cap)"
        ))
        .into());
    }
    accepted(&state, &student, Experiment::Matmul(params))
}

/// `POST /api/experiments/timing` (no parameters; an empty body or `{}`).
pub async fn timing(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Response, ApiError> {
    if !body.iter().all(u8::is_ascii_whitespace) {
        let _: EmptyParams = parse(&body, "{}")?;
    }
    accepted(&state, &student, Experiment::Timing)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct EmptyParams {}

/// `POST /api/experiments/training` with `{"batch", "hidden", "steps", "log_every",
/// "precision"?, "optimizer"?}`.
pub async fn training(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let params: crate::gpu::train::TrainParams = parse(
        &body,
        r#"{"batch": 32, "hidden": 128, "steps": 200, "log_every": 10}"#,
    )?;
    let limits = &state.engine.limits;
    params
        .validate(limits.max_train_steps, limits.max_hidden)
        .map_err(AppError::Invalid)?;
    accepted(&state, &student, Experiment::Training(params))
}

/// `POST /api/experiments/precision` with `{"size": …}`.
pub async fn precision(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let params: crate::gpu::precision::PrecisionParams = parse(&body, r#"{"size": 1024}"#)?;
    params
        .validate(state.engine.limits.max_matmul_size)
        .map_err(AppError::Invalid)?;
    accepted(&state, &student, Experiment::Precision(params))
}

/// `POST /api/experiments/break-it` with `{"case": "batch-on-host" | "log-every-step"}`.
pub async fn break_it(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let params: crate::gpu::breakit::BreakItParams = parse(&body, r#"{"case": "batch-on-host"}"#)?;
    params.validate().map_err(AppError::Invalid)?;
    accepted(&state, &student, Experiment::BreakIt(params))
}

//! A learner's own GPU runs (`/api/me/gpu-runs`): upload the file `gpulab bench all
//! --json` wrote on a GPU elsewhere (the About page's form, beside the device card),
//! list them, remove one. Each is checked by `course::learner_runs` like any other
//! input (size, shape, provenance; a 4xx that says what is wrong) and stored for this
//! student only (`db::learner_runs`): the panels show it as *their* run beside their CPU
//! runs and under prediction reveals, apart from the course's recordings, never as this
//! server's GPU.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use serde::Serialize;

use crate::config::Limits;
use crate::course::learner_runs::{self, UploadError};
use crate::course::reference_runs::{ImportError, ReferenceFile};
use crate::db::learner_runs::{self as stored, Added};
use crate::web::error::{ApiError, AppError, ErrorBody};
use crate::web::identity::StudentId;
use crate::web::state::AppState;

/// One of the learner's runs.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct LearnerRun {
    /// Its id, for `DELETE /api/me/gpu-runs/{id}`.
    pub id: i64,
    /// When it was uploaded (ISO-8601, UTC).
    pub imported_at: String,
    /// The run, as a `recorded` reference file titled as the learner's.
    pub file: ReferenceFile,
}

impl LearnerRun {
    fn of(run: stored::StoredRun) -> Option<Self> {
        Some(Self {
            id: run.id,
            imported_at: run.imported_at,
            file: serde_json::from_str(&run.file_json).ok()?,
        })
    }
}

/// This learner's GPU runs, oldest first.
#[utoipa::path(get, path = "/api/me/gpu-runs", tag = "device",
    responses((status = 200, description = "OK", body = Vec<LearnerRun>)))]
pub async fn list(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Result<Json<Vec<LearnerRun>>, ApiError> {
    let runs = state.db.run(move |tx| stored::list(tx, &student.0)).await?;
    Ok(Json(runs.into_iter().filter_map(LearnerRun::of).collect()))
}

/// Upload a `gpulab bench all --json` document made on a GPU; it is kept as this
/// learner's run.
#[utoipa::path(post, path = "/api/me/gpu-runs", tag = "device",
    request_body(content = Object, content_type = "application/json",
        description = "The JSON `gpulab bench all --json` printed on a GPU"),
    responses(
        (status = 201, description = "Stored as this learner's run", body = LearnerRun),
        (status = 400, description = "Not text, or not JSON", body = ErrorBody),
        (status = 409, description = "This run is already stored, or the learner keeps the most runs allowed", body = ErrorBody),
        (status = 413, description = "Larger than a run file can be", body = ErrorBody),
        (status = 422, description = "Not a bench document from a GPU, or its contents do not hold together (the message says which part)", body = ErrorBody),
    ))]
pub async fn upload(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<(StatusCode, Json<LearnerRun>), ApiError> {
    let known: Vec<&str> = crate::experiments::REGISTRY
        .iter()
        .map(|e| e.name())
        .collect();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let file = learner_runs::check_upload(&body, Limits::LEARNER_RUN_MAX_BYTES, &known, now)
        .map_err(refusal)?;
    let run = file
        .recorded
        .as_ref()
        .ok_or_else(|| AppError::Invalid("the run has no recorded part".into()))?;
    let (device, at) = (run.device.clone(), run.recorded_at_unix);
    let json = serde_json::to_string(&file)
        .map_err(|e| AppError::Invalid(format!("the run cannot be stored: {e}")))?;
    let added = state
        .db
        .run(move |tx| {
            stored::add(
                tx,
                &student.0,
                &device,
                at,
                &json,
                Limits::LEARNER_RUNS_PER_STUDENT,
            )
        })
        .await?;
    let newest = match added {
        Added::Stored { id, imported_at } => LearnerRun {
            id,
            imported_at,
            file,
        },
        Added::Duplicate => {
            return Err(AppError::Conflict(
                "this run (same GPU, same time) is already among your runs".into(),
            )
            .into());
        }
        Added::Full => {
            return Err(AppError::Conflict(format!(
                "you keep {} runs already: remove one on the About page first",
                Limits::LEARNER_RUNS_PER_STUDENT
            ))
            .into());
        }
    };
    Ok((StatusCode::CREATED, Json(newest)))
}

/// The status and message for a refused upload.
fn refusal(error: UploadError) -> AppError {
    let message = format!("This file cannot be imported: {error}.");
    match error {
        UploadError::TooLarge { .. } => AppError::Rejected(StatusCode::PAYLOAD_TOO_LARGE, message),
        UploadError::NotText | UploadError::Shape(ImportError::NotJson(_)) => {
            AppError::BadRequest(message)
        }
        UploadError::Shape(_) | UploadError::NotGpu | UploadError::Provenance(_) => {
            AppError::Invalid(message)
        }
    }
}

/// Remove one of this learner's runs.
#[utoipa::path(delete, path = "/api/me/gpu-runs/{id}", tag = "device",
    params(("id" = i64, Path, description = "The run's id from GET /api/me/gpu-runs")),
    responses(
        (status = 204, description = "Removed"),
        (status = 400, description = "Not a run id", body = ErrorBody),
        (status = 404, description = "No such run of this learner's", body = ErrorBody),
    ))]
pub async fn remove(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id: i64 = id
        .parse()
        .map_err(|_| AppError::BadRequest(format!("run ids are whole numbers, not `{id}`")))?;
    let removed = state
        .db
        .run(move |tx| stored::remove(tx, &student.0, id))
        .await?;
    if removed {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(AppError::NotFound(format!("/api/me/gpu-runs/{id}")).into())
    }
}

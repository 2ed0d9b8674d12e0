//! Live experiments over HTTP. Reading the device card or the start-up doctor report is
//! instant; an experiment is queued and answered with `202 Accepted`, a job id and its
//! queue position, and the browser polls `/api/jobs/{id}` until it is done. A full
//! queue, or a per-student cap while other students' experiments wait, answers
//! `429 Too Many Requests` with `Retry-After`; parameters outside the
//! server's caps answer 422 with the cap in the message. One handler serves every
//! registered experiment: the router mounts it once per registry entry.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};

use crate::course::reference_runs;
use crate::engine::Refused;
use crate::experiments::{DynExperiment, ParamError, REGISTRY, Rule};
use crate::gpu::DeviceCard;
use crate::gpu::doctor::Report;
use crate::web::error::{ApiError, AppError, ErrorBody};
use crate::web::identity::StudentId;
use crate::web::instructor_access;
use crate::web::state::AppState;

/// One registered experiment as a panel needs it: where to post, the defaults and the
/// bounds on this server.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ExperimentInfo {
    /// `POST /api/experiments/{name}`.
    pub name: &'static str,
    /// The lesson directive that places its panel.
    pub directive: &'static str,
    /// The lesson it belongs to.
    pub lesson: &'static str,
    /// Where to post a run.
    pub path: String,
    /// The parameters a run uses unless told otherwise.
    #[schema(value_type = Object)]
    pub defaults: Value,
    /// Each parameter's bounds on this server.
    #[schema(value_type = Vec<Object>)]
    pub rules: Vec<Rule>,
    /// What the panel asks before a run: the first question that applies to the
    /// backend and the parameters (`on`, `when`).
    pub predictions: Vec<crate::course::predictions::Question>,
}

/// `GET /api/device`'s answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeviceInfo {
    /// What the experiments run on (`kind` is `cuda` or `cpu`).
    pub device: DeviceCard,
    /// This device's ceilings, measured at start-up, with the datasheet peaks beside
    /// them (absent until measured; on a web node, those a live worker measured).
    pub ceilings: Option<crate::experiments::ceilings::Ceilings>,
    /// Experiments waiting now.
    pub queue_depth: usize,
    /// This server's caps, by name.
    #[schema(value_type = Object)]
    pub limits: Value,
    /// Every experiment, with its defaults and bounds.
    pub experiments: Vec<ExperimentInfo>,
    /// What panels that are not queued experiments ask before acting (the allocator
    /// playground: before a `del`), by panel name.
    pub panel_predictions:
        std::collections::BTreeMap<&'static str, crate::course::predictions::Question>,
}

/// The device card, the queue's depth, this server's caps and every experiment's
/// defaults and bounds, so a page can bound its controls like the server does.
#[utoipa::path(get, path = "/api/device", tag = "device",
    responses((status = 200, description = "OK", body = DeviceInfo)))]
pub async fn device(State(state): State<AppState>) -> Json<DeviceInfo> {
    let limits = &state.engine.limits;
    let max = |name: &str, field: &str| {
        crate::experiments::find(name)
            .and_then(|e| e.rules(limits).into_iter().find(|r| r.field() == field))
            .and_then(|r| match r {
                Rule::Range { min, max, .. } => Some((min, max)),
                Rule::OneOf { .. } => None,
            })
    };
    let card = &state.engine.card;
    let ceilings =
        state.engine.ceilings().await.map(|c| {
            match reference_runs::published_memory_gbps(&state.course.references, &card.name) {
                Some((gbps, device)) => {
                    c.with_memory_datasheet(gbps, format!("NVIDIA datasheet, {device}"))
                }
                None => c,
            }
        });
    let mut device = (**card).clone();
    device.cpu.blas_reference.clone_from(&state.blas_reference);
    Json(DeviceInfo {
        device,
        ceilings,
        queue_depth: state.engine.queue_depth().await,
        limits: json!({
            "queue_capacity": limits.queue_length,
            "job_timeout_secs": limits.job_timeout_secs,
            "max_transfer_bytes": limits.max_transfer_bytes,
            "min_transfer_bytes": max("transfer", "max_bytes").map(|(min, _)| min),
            "max_matmul_size": limits.max_matmul_size,
            "max_train_steps": limits.max_train_steps,
            "max_hidden": limits.max_hidden,
            "max_batch": max("training", "batch").map(|(_, max)| max),
            "playground_per_student_bytes": limits.playground_per_student_bytes(),
            "playground_total_bytes": limits.playground_total_bytes(),
        }),
        experiments: REGISTRY
            .iter()
            .map(|e| ExperimentInfo {
                name: e.name(),
                directive: e.directive(),
                lesson: e.lesson(),
                path: format!("/api/experiments/{}", e.name()),
                defaults: e.defaults(),
                rules: e.rules(limits),
                predictions: e
                    .quantities()
                    .iter()
                    .filter_map(|q| state.course.predictions.get(q.key).cloned())
                    .collect(),
            })
            .collect(),
        panel_predictions: crate::experiments::prediction::STANDALONE
            .iter()
            .filter_map(|s| {
                let question = state.course.predictions.get(s.quantity.key)?;
                Some((s.name, question.clone()))
            })
            .collect(),
    })
}

/// Reference GPU results (`content/reference-runs/`): published peaks with their
/// sources, and recorded GPU Lab runs with their provenance. Panels on the CPU backend
/// draw them as a labelled overlay.
#[utoipa::path(get, path = "/api/reference-runs", tag = "device",
    responses((status = 200, description = "OK", body = Vec<crate::course::reference_runs::ReferenceFile>)))]
pub async fn reference_runs(
    State(state): State<AppState>,
) -> Json<Vec<crate::course::reference_runs::ReferenceFile>> {
    Json(state.course.references.as_ref().clone())
}

/// The layered GPU check taken when the server started.
#[utoipa::path(get, path = "/api/doctor", tag = "device",
    responses((status = 200, description = "OK", body = Report)))]
pub async fn doctor(State(state): State<AppState>) -> Json<Report> {
    Json((*state.engine.doctor).clone())
}

fn too_many(retry_after_secs: u64, message: String) -> Response {
    let mut response = (
        StatusCode::TOO_MANY_REQUESTS,
        Json(ErrorBody::new(StatusCode::TOO_MANY_REQUESTS, message)),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}

/// The body of a 202: where the job stands and where to poll.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Queued {
    /// Poll `/api/jobs/{job_id}`.
    pub job_id: u64,
    /// Always `queued`.
    #[schema(value_type = String, example = "queued")]
    pub status: &'static str,
    /// 1-based place in the queue.
    #[schema(minimum = 1)]
    pub position: usize,
    /// Seconds until it may start, from recent run times.
    pub estimated_wait_secs: f64,
    /// The URL to poll.
    pub poll: String,
}

/// Validates `body` for `experiment` and queues it for `student`.
pub async fn submit(
    experiment: &'static dyn DynExperiment,
    state: AppState,
    student: StudentId,
    address: Option<std::net::IpAddr>,
    query: Option<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let parsed = crate::web::extract::optional_json(&body, &experiment.defaults().to_string())?;
    let prediction = crate::web::extract::predict_query(query.as_deref())?;
    let mut job = experiment
        .prepare(parsed.as_ref(), &state.engine.limits)
        .map_err(|e| match e {
            ParamError::Malformed { .. } => AppError::BadRequest(e.to_string()),
            ParamError::Invalid(message) => AppError::Invalid(message),
        })?;
    job.prediction = prediction;
    crate::web::guard::refuse_new_work_unless_writable(&state.db, "Experiments").await?;
    if let Err(wait) = state.experiment_limiter.check(&student.0)
        && others_waiting(&state, &student).await?
    {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        state.metrics.rejected("rate_limited");
        return Ok(too_many(
            secs,
            format!(
                "You have started {} experiments in the last minute, the most one student may while other students' experiments are waiting for the GPU. Try again in about {secs} s.",
                state.config.limits.experiments_per_minute
            ),
        ));
    }
    match state.engine.submit(&student.0, address, job).await {
        Ok((id, position)) => Ok((
            StatusCode::ACCEPTED,
            [(header::LOCATION, format!("/api/jobs/{id}"))],
            Json(Queued {
                job_id: id,
                status: "queued",
                position,
                estimated_wait_secs: state.engine.estimated_wait_secs().await.round(),
                poll: format!("/api/jobs/{id}"),
            }),
        )
            .into_response()),
        Err(Refused::Full { retry_after_secs }) => Ok(too_many(
            retry_after_secs,
            format!(
                "The experiment queue is full: the GPU is busy with other students' experiments. Try again in about {retry_after_secs} s."
            ),
        )),
        Err(Refused::AddressBusy { limit }) => Ok(too_many(
            (state.engine.estimated_wait_secs().await.ceil() as u64).max(1),
            format!(
                "Your network address already has {limit} experiments waiting, the most one address may while other students' experiments are waiting for the GPU (the instructor can raise it with --pending-per-address when the class shares one address). Try again when one has started."
            ),
        )),
        Err(Refused::TooManyPending { limit }) => Ok(too_many(
            (state.engine.estimated_wait_secs().await.ceil() as u64).max(1),
            format!(
                "You already have {limit} experiments waiting, the most one student may while other students' experiments are waiting for the GPU. Wait for one of them to start, then try again."
            ),
        )),
        Err(Refused::RateLimited { limit }) => Ok(too_many(
            60,
            format!(
                "You have started {limit} experiments in the last minute, the most one student may while other students' experiments are waiting for the GPU. Try again in a minute."
            ),
        )),
        Err(Refused::Unavailable(why)) => Err(AppError::Unavailable(format!(
            "The class queue cannot be reached just now ({why}); your experiment was not queued. Try again in a few seconds."
        ))
        .into()),
        Err(Refused::Closed) => Err(AppError::Unavailable(
            "The server is shutting down and takes no new experiments. Try again in a minute."
                .into(),
        )
        .into()),
    }
}

/// Whether another student's experiment waits, so this node's per-student rate binds
/// (alone with the GPU, a learner is not limited: [`crate::db::fair_share`]).
async fn others_waiting(state: &AppState, student: &StudentId) -> Result<bool, AppError> {
    state.engine.others_waiting(&student.0).await.map_err(|why| {
        AppError::Unavailable(format!(
            "The class queue cannot be reached just now ({why}); your experiment was not queued. Try again in a few seconds."
        ))
    })
}

/// A job as `GET /api/jobs/{id}` reports it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct JobView {
    /// The job's id.
    pub job_id: u64,
    /// `queued`, `running`, `done` or `failed`.
    #[schema(value_type = String, pattern = "^(queued|running|done|failed)$")]
    pub status: String,
    /// Place in the queue while queued (1 runs next).
    pub position: Option<usize>,
    /// The experiment's result with its `provenance`, once done.
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// What went wrong, once failed.
    pub error: Option<String>,
}

/// A job: queued (with position), running, done (with result) or failed (with error).
#[utoipa::path(get, path = "/api/jobs/{id}", tag = "experiments",
    params(("id" = u64, Path, description = "The job id from the 202 answer")),
    responses(
        (status = 200, description = "OK", body = JobView),
        (status = 400, description = "Not a job id", body = ErrorBody),
        (status = 404, description = "No such job of this student's (another student's job, or forgotten: finished jobs are kept for a while)", body = ErrorBody),
    ))]
pub async fn job(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    caller: instructor_access::Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let id: u64 = id
        .parse()
        .map_err(|_| AppError::BadRequest(format!("job ids are whole numbers, not `{id}`")))?;
    // Only the student who started a job (or the instructor) may read it; to anyone
    // else it does not exist.
    let owner = (!instructor_access::is_instructor(&state, &caller)).then_some(student.0.as_str());
    let job = state
        .engine
        .job(id, owner)
        .await
        .map_err(|e| {
            AppError::Unavailable(format!(
                "The class queue cannot be read just now ({e}); poll again in a few seconds."
            ))
        })?
        .ok_or_else(|| AppError::NotFound(format!("/api/jobs/{id}")))?;
    let mut body = serde_json::to_value(job).unwrap_or_default();
    body["job_id"] = json!(id);
    Ok(Json(body))
}

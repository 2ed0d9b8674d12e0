//! Class rounds (predict, then measure, for the whole class at once): the instructor
//! opens a round for one experiment (`POST /instructor/round/open`), every student's
//! page shows its question (`GET /api/round`, polled by `class-round.js`) and takes a
//! prediction (`POST /api/round/prediction`, stored before the 2xx), the instructor runs
//! it once on the shared GPU (`POST /instructor/round/run`), and when the job finishes a
//! task stores the measurement and every prediction, scored, in one transaction; then
//! every page reveals it together. One round at a time; opening another replaces it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::response::Redirect;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::instructor::{Caller, require};
use crate::course::predictions::Question;
use crate::db::predictions::PredictionRow;
use crate::db::rounds;
use crate::engine::queue::JobState;
use crate::experiments::prediction::{self, Score};
use crate::web::error::{ApiError, AppError};
use crate::web::identity::StudentId;
use crate::web::state::AppState;

/// Where a round stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Taking predictions.
    Open,
    /// Running on the GPU; predictions closed.
    Running,
    /// Measured and revealed.
    Revealed,
    /// The run failed (the round shows why).
    Failed,
}

impl Status {
    /// The name pages, the API and the database use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Running => "running",
            Self::Revealed => "revealed",
            Self::Failed => "failed",
        }
    }
}

/// The round in progress (in memory; its predictions are in the database).
#[derive(Debug, Clone)]
pub struct Round {
    id: i64,
    experiment: &'static str,
    title: &'static str,
    params: Value,
    question: Question,
    status: Status,
    measured: Option<f64>,
    error: Option<String>,
    predictions: HashMap<String, f64>,
}

impl Round {
    /// How its quantity is scored.
    fn scale(&self) -> prediction::Scale {
        prediction::scale_of(&self.question.quantity)
    }
}

/// The shared slot for the round.
pub type RoundSlot = Arc<Mutex<Option<Round>>>;

/// What a student's page shows (`GET /api/round`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RoundView {
    /// The round's id.
    pub id: i64,
    /// The experiment's API name.
    pub experiment: &'static str,
    /// Its caption.
    pub title: &'static str,
    /// The parameters it runs with.
    #[schema(value_type = Object)]
    pub params: Value,
    /// The question, as the panel asks it.
    pub question: Question,
    /// `open`, `running`, `revealed` or `failed`.
    #[schema(value_type = String)]
    pub status: Status,
    /// How many students predicted.
    pub predictions: usize,
    /// This student's prediction, if they made one.
    pub yours: Option<f64>,
    /// The measured value, once revealed.
    pub measured: Option<f64>,
    /// This student's score, once revealed.
    #[schema(value_type = Option<Object>)]
    pub score: Option<Score>,
    /// Why the run failed, if it did.
    pub error: Option<String>,
}

/// `{"round": …}`: the round, or null when none is open.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CurrentRound {
    /// The round.
    pub round: Option<RoundView>,
}

fn lock(slot: &RoundSlot) -> std::sync::MutexGuard<'_, Option<Round>> {
    slot.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// On a web node of a class, reads the round from the database, where every web node
/// writes it, so each shows the same round; one server keeps it in memory only.
pub async fn sync(state: &AppState) -> Result<(), AppError> {
    if !state.engine.is_shared() {
        return Ok(());
    }
    let stored = state.db.run(rounds::current).await?;
    let round = stored.and_then(|stored| {
        let experiment = crate::experiments::find(&stored.experiment)?;
        Some(Round {
            id: stored.id,
            experiment: experiment.name(),
            title: experiment.title(),
            params: serde_json::from_str(&stored.params).unwrap_or_default(),
            question: state.course.predictions.get(&stored.quantity)?.clone(),
            status: [Status::Open, Status::Running, Status::Revealed]
                .into_iter()
                .find(|s| s.name() == stored.status)
                .unwrap_or(Status::Failed),
            measured: stored.measured,
            error: stored.error,
            predictions: stored.predictions.into_iter().collect(),
        })
    });
    *lock(&state.round) = round;
    Ok(())
}

/// Sets round `round`'s status here and in the database (for the other web nodes).
async fn mark(state: &AppState, round: i64, status: Status, error: Option<String>) {
    if let Some(r) = lock(&state.round).as_mut().filter(|r| r.id == round) {
        r.status = status;
        r.error.clone_from(&error);
    }
    let name = status.name();
    let stored = state
        .db
        .run(move |tx| rounds::set_status(tx, round, name, error.as_deref()))
        .await;
    if let Err(error) = stored {
        tracing::warn!(%error, round, "could not store the class round's status");
    }
}

#[utoipa::path(get, path = "/api/round", tag = "predictions",
    responses((status = 200, description = "The class round, if the instructor opened one", body = CurrentRound)))]
/// `GET /api/round`: the class round as this student sees it.
pub async fn current(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Json<CurrentRound> {
    if let Err(error) = sync(&state).await {
        tracing::warn!(%error, "could not read the class round");
    }
    let guard = lock(&state.round);
    Json(CurrentRound {
        round: guard.as_ref().map(|r| {
            let yours = r.predictions.get(&student.0).copied();
            RoundView {
                id: r.id,
                experiment: r.experiment,
                title: r.title,
                params: r.params.clone(),
                question: r.question.clone(),
                status: r.status,
                predictions: r.predictions.len(),
                yours,
                measured: r.measured,
                score: match (yours, r.measured) {
                    (Some(p), Some(m)) => Some(prediction::score(p, m, r.scale())),
                    _ => None,
                },
                error: r.error.clone(),
            }
        }),
    })
}

/// A student's round prediction.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoundPrediction {
    /// The round's id (from `GET /api/round`).
    pub round: i64,
    /// The predicted value.
    pub predicted: f64,
}

#[utoipa::path(post, path = "/api/round/prediction", tag = "predictions",
    request_body = RoundPrediction,
    responses(
        (status = 200, description = "Stored", body = CurrentRound),
        (status = 400, description = "Not JSON, or not the shape", body = crate::web::error::ErrorBody),
        (status = 409, description = "No such round open (closed, already run, or replaced)", body = crate::web::error::ErrorBody),
        (status = 422, description = "Not a number from 0 to 1e12", body = crate::web::error::ErrorBody),
    ))]
/// `POST /api/round/prediction`: stores this student's prediction while the round is open.
pub async fn predict(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
    body: Bytes,
) -> Result<Json<CurrentRound>, ApiError> {
    let sent: RoundPrediction = serde_json::from_slice(&body).map_err(|e| {
        AppError::BadRequest(format!(
            "expected {{\"round\": id, \"predicted\": number}}: {e}"
        ))
    })?;
    let predicted = prediction::check(sent.predicted).map_err(AppError::Invalid)?;
    sync(&state).await?;
    let open = lock(&state.round)
        .as_ref()
        .is_some_and(|r| r.id == sent.round && r.status == Status::Open);
    if !open {
        return Err(AppError::Conflict(
            "This round takes no more predictions: the instructor has run it, closed it or opened another.".into(),
        )
        .into());
    }
    let (round, id) = (sent.round, student.0.clone());
    state
        .db
        .run(move |tx| rounds::predict(tx, round, &id, predicted))
        .await
        .map_err(AppError::from)?;
    if let Some(r) = lock(&state.round).as_mut().filter(|r| r.id == round) {
        r.predictions.insert(student.0.clone(), predicted);
    }
    Ok(current(State(state), Extension(student)).await)
}

fn form_value(body: &[u8], name: &str) -> Result<Option<String>, AppError> {
    let mut found = None;
    for (key, value) in crate::web::extract::form(body)? {
        if key != name {
            return Err(AppError::BadRequest(format!("unknown form field `{key}`")));
        }
        found = Some(value);
    }
    Ok(found)
}

/// `POST /instructor/round/open` with `experiment`: opens a round with the
/// experiment's default parameters (replacing any round in progress).
pub async fn open(
    State(state): State<AppState>,
    caller: Caller,
    body: Bytes,
) -> Result<Redirect, AppError> {
    require(&state, &caller)?;
    let name = form_value(&body, "experiment")?.unwrap_or_default();
    let experiment = crate::experiments::find(&name)
        .ok_or_else(|| AppError::Invalid(format!("no experiment called `{name}`")))?;
    let params = experiment.defaults();
    let on_gpu = state.engine.card.kind == "cuda";
    let question = prediction::pick(experiment.quantities(), &params, on_gpu)
        .and_then(|q| state.course.predictions.get(q.key).cloned());
    let Some(question) = question else {
        return Err(AppError::Invalid(format!(
            "`{name}` asks no question on this server"
        )));
    };
    let (quantity, stored) = (question.quantity.clone(), params.to_string());
    let id = state
        .db
        .run(move |tx| rounds::open(tx, experiment.name(), &quantity, &stored))
        .await?;
    *lock(&state.round) = Some(Round {
        id,
        experiment: experiment.name(),
        title: experiment.title(),
        params,
        question,
        status: Status::Open,
        measured: None,
        error: None,
        predictions: HashMap::new(),
    });
    Ok(Redirect::to("/instructor#round"))
}

/// `POST /instructor/round/close`: ends the round (pages stop showing it).
pub async fn close(State(state): State<AppState>, caller: Caller) -> Result<Redirect, AppError> {
    require(&state, &caller)?;
    state.db.run(rounds::close).await?;
    *lock(&state.round) = None;
    Ok(Redirect::to("/instructor#round"))
}

/// `POST /instructor/round/run`: closes predictions and queues the experiment once;
/// a task reveals the result when it is measured.
pub async fn run(State(state): State<AppState>, caller: Caller) -> Result<Redirect, AppError> {
    require(&state, &caller)?;
    sync(&state).await?;
    let (round, experiment, params) = {
        let guard = lock(&state.round);
        let Some(r) = guard.as_ref().filter(|r| r.status == Status::Open) else {
            return Err(AppError::Conflict(
                "No round is open: open one first.".into(),
            ));
        };
        (r.id, r.experiment, r.params.clone())
    };
    mark(&state, round, Status::Running, None).await;
    let Some(entry) = crate::experiments::find(experiment) else {
        mark(
            &state,
            round,
            Status::Failed,
            Some(format!("no experiment `{experiment}`")),
        )
        .await;
        return Ok(Redirect::to("/instructor#round"));
    };
    let job = entry
        .prepare(Some(&params), &state.engine.limits)
        .map_err(|e| AppError::Invalid(e.to_string()))?;
    match state.engine.submit("instructor-round", None, job).await {
        Ok((id, _)) => {
            tokio::spawn(reveal_when_done(state.clone(), round, id));
        }
        Err(refused) => {
            let why =
                format!("the queue refused the run ({refused:?}); open the round again and retry");
            mark(&state, round, Status::Failed, Some(why)).await;
        }
    }
    Ok(Redirect::to("/instructor#round"))
}

/// Waits for job `job` of round `round`, then stores and reveals its measurement.
async fn reveal_when_done(state: AppState, round: i64, job: u64) {
    let result = match state.engine.finished(job, None).await {
        Some(JobState::Done { result }) => Ok(result),
        Some(JobState::Failed { error }) => Err(error),
        _ => Err("the job was lost".to_string()),
    };
    let outcome = match result {
        Ok(result) => {
            let measured = result.get("measured");
            let value = measured
                .and_then(|m| m.get("value"))
                .and_then(Value::as_f64);
            let template = lock(&state.round)
                .as_ref()
                .filter(|r| r.id == round)
                .and_then(|r| {
                    Some(PredictionRow {
                        student_id: String::new(),
                        experiment: r.experiment.to_string(),
                        quantity: r.question.quantity.clone(),
                        params: r.params.to_string(),
                        predicted: 0.0,
                        measured: value?,
                        unit: r.question.unit.clone(),
                        backend: state.engine.card.kind.to_string(),
                        device: state.engine.card.name.clone(),
                    })
                });
            match template {
                None => Err("the run measured nothing to compare with".to_string()),
                Some(template) => state
                    .db
                    .run(move |tx| rounds::reveal(tx, round, &template))
                    .await
                    .map(|_| value)
                    .map_err(|e| e.to_string()),
            }
        }
        Err(error) => Err(error),
    };
    match outcome {
        // `rounds::reveal` stored the status with the measurement.
        Ok(value) => {
            if let Some(r) = lock(&state.round).as_mut().filter(|r| r.id == round) {
                r.measured = value;
                r.status = Status::Revealed;
            }
        }
        Err(error) => mark(&state, round, Status::Failed, Some(error)).await,
    }
}

/// The round as the instructor page shows it.
#[derive(Debug, Clone)]
pub struct InstructorRound {
    /// The experiment's caption.
    pub title: &'static str,
    /// The question.
    pub question: String,
    /// `open`, `running`, `revealed`, `failed`.
    pub status: &'static str,
    /// Predictions so far.
    pub predictions: usize,
    /// The measured value with its unit, once revealed.
    pub measured: Option<String>,
    /// Share within 2× once revealed (percent).
    pub within_2x_percent: Option<u32>,
    /// Why it failed.
    pub error: Option<String>,
}

/// The round for the instructor page, if one is open.
pub fn instructor_view(slot: &RoundSlot) -> Option<InstructorRound> {
    let guard = lock(slot);
    let r = guard.as_ref()?;
    let within = r.measured.map(|m| {
        let scores: Vec<Score> = r
            .predictions
            .values()
            .map(|p| prediction::score(*p, m, r.scale()))
            .collect();
        let hits = scores.iter().filter(|s| s.within_2x).count();
        (hits * 100).checked_div(scores.len()).unwrap_or(0) as u32
    });
    Some(InstructorRound {
        title: r.title,
        question: r.question.question.clone(),
        status: r.status.name(),
        predictions: r.predictions.len(),
        measured: r
            .measured
            .map(|m| crate::web::calibration::tick_value(m, &r.question.unit)),
        within_2x_percent: within,
        error: r.error.clone(),
    })
}

//! Class rounds over HTTP: a student's page shows the round (`GET /api/round`, polled by
//! `class-round.js`) and takes a prediction (`POST /api/round/prediction`, stored before
//! the 2xx); the instructor opens (`POST /instructor/round/open`), runs
//! (`POST /instructor/round/run`) and closes (`POST /instructor/round/close`) it. The
//! round's state machine and scoring are [`crate::classroom::round`]; these handlers
//! parse, call it and render.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::response::Redirect;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::classroom::round::{self as class_round, Status};
use crate::course::predictions::Question;
use crate::experiments::prediction::{self, Score};
use crate::web::error::{ApiError, AppError};
use crate::web::identity::StudentId;
use crate::web::instructor_access::{Caller, require};
use crate::web::state::AppState;

/// What a student's page shows (`GET /api/round`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RoundView {
    /// The round's id.
    pub id: i64,
    /// The experiment's API name.
    pub experiment: &'static str,
    /// Its caption.
    pub title: String,
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

#[utoipa::path(get, path = "/api/round", tag = "predictions",
    responses((status = 200, description = "The class round, if the instructor opened one", body = CurrentRound)))]
/// `GET /api/round`: the class round as this student sees it.
pub async fn current(
    State(state): State<AppState>,
    Extension(student): Extension<StudentId>,
) -> Json<CurrentRound> {
    let round = class_round::current(&state.classroom)
        .await
        .unwrap_or_else(|error| {
            tracing::warn!(%error, "could not read the class round");
            None
        });
    Json(CurrentRound {
        round: round.map(|r| RoundView {
            yours: r.predictions.get(&student.0).copied(),
            score: r.score_of(&student.0),
            predictions: r.predictions.len(),
            id: r.id,
            experiment: r.experiment,
            title: r.title,
            params: r.params,
            question: r.question,
            status: r.status,
            measured: r.measured,
            error: r.error,
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
    class_round::predict(&state.classroom, sent.round, &student.0, predicted).await?;
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
    class_round::open(&state.classroom, &name).await?;
    Ok(Redirect::to("/instructor#round"))
}

/// `POST /instructor/round/close`: ends the round (pages stop showing it).
pub async fn close(State(state): State<AppState>, caller: Caller) -> Result<Redirect, AppError> {
    require(&state, &caller)?;
    class_round::close(&state.classroom).await?;
    Ok(Redirect::to("/instructor#round"))
}

/// `POST /instructor/round/run`: closes predictions and queues the experiment once;
/// the worker that measures it reveals the round.
pub async fn run(State(state): State<AppState>, caller: Caller) -> Result<Redirect, AppError> {
    require(&state, &caller)?;
    class_round::run(&state.classroom).await?;
    Ok(Redirect::to("/instructor#round"))
}

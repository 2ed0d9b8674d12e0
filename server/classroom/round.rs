//! A class round's state machine and scoring (predict, then measure, for the whole class
//! at once): open → (students predict) → running → revealed or failed; closing ends it.
//! The round lives in the database (`rounds`, `round_predictions`), in both modes, so
//! every web node of a class — and a one-box server — shows the same round; each call
//! here reads it fresh. Running it queues the experiment once, for the round; the worker
//! that completes the job stores the value it measured, with its device, and every
//! prediction, scored, in that same transaction ([`crate::db::rounds::reveal`]), and
//! every page reveals it together — whichever web node opened it, alive or not. The
//! HTTP side (`web::routes::class_round`) parses, calls this and renders; the
//! instructor's page shows [`instructor_view`].

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use super::{Classroom, ClassroomError};
use crate::course::predictions::Question;
use crate::db::rounds;
use crate::experiments::Experiment as _;
use crate::experiments::labs::{self, LabId, LabParams, Labs};
use crate::experiments::prediction::{self, Score};

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

/// The round in progress, as stored.
#[derive(Debug, Clone)]
pub struct Round {
    /// Its id.
    pub id: i64,
    /// The experiment's API name.
    pub experiment: &'static str,
    /// Its caption (a lab round's names the lab and the settings it runs).
    pub title: String,
    /// The parameters it runs with.
    pub params: Value,
    /// The question asked.
    pub question: Question,
    /// Where it stands.
    pub status: Status,
    /// The measurement, once revealed.
    pub measured: Option<f64>,
    /// Why the run failed.
    pub error: Option<String>,
    /// Every student's prediction.
    pub predictions: HashMap<String, f64>,
}

impl Round {
    /// `student`'s prediction scored against the measurement, once revealed.
    pub fn score_of(&self, student: &str) -> Option<Score> {
        let predicted = *self.predictions.get(student)?;
        let scale = prediction::scale_of(&self.question.quantity);
        Some(prediction::score(predicted, self.measured?, scale))
    }

    /// The share of predictions within 2× of the measurement (percent), once revealed.
    pub fn within_2x_percent(&self) -> Option<u32> {
        let measured = self.measured?;
        let scale = prediction::scale_of(&self.question.quantity);
        let hits = self
            .predictions
            .values()
            .filter(|p| prediction::score(**p, measured, scale).within_2x)
            .count();
        Some(
            (hits * 100)
                .checked_div(self.predictions.len())
                .unwrap_or(0) as u32,
        )
    }
}

/// The round in progress, if any.
pub async fn current(classroom: &Classroom) -> Result<Option<Round>, ClassroomError> {
    let stored = classroom.db.run(rounds::current).await?;
    Ok(stored.and_then(|stored| {
        let experiment = crate::experiments::find(&stored.experiment)?;
        let params: Value = serde_json::from_str(&stored.params).unwrap_or_default();
        Some(Round {
            id: stored.id,
            experiment: experiment.name(),
            title: title(experiment.name(), experiment.title(), &params),
            params,
            question: classroom.course.predictions.get(&stored.quantity)?.clone(),
            status: [Status::Open, Status::Running, Status::Revealed]
                .into_iter()
                .find(|s| s.name() == stored.status)
                .unwrap_or(Status::Failed),
            measured: stored.measured,
            error: stored.error,
            predictions: stored.predictions.into_iter().collect(),
        })
    }))
}

/// A round's caption: the experiment's, or for a lab the lab and its settings.
fn title(experiment: &str, caption: &str, params: &Value) -> String {
    (experiment == Labs::NAME)
        .then(|| serde_json::from_value::<LabParams>(params.clone()).ok())
        .flatten()
        .map_or_else(|| caption.to_string(), |p| p.round_title())
}

/// What an instructor may open a round on: each experiment that asks the class a
/// number, and each tuning lab by name (`lab/feed-the-gpu` …), run with its known-good
/// settings. (value, caption) pairs.
pub fn choices() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in crate::experiments::REGISTRY
        .iter()
        .filter(|e| !e.quantities().is_empty())
    {
        if e.name() == Labs::NAME {
            out.extend(labs::ALL.iter().map(|id| {
                let l = labs::lab(*id);
                (
                    format!("{}/{}", Labs::NAME, id.name()),
                    format!("Tuning lab: {} (its known-good settings)", l.title),
                )
            }));
        } else {
            out.push((e.name().to_string(), e.title().to_string()));
        }
    }
    out
}

/// Opens a round for experiment `name` with its default parameters, or for a lab named
/// `lab/<lab>` with that lab's known-good settings on this backend (replacing any round
/// in progress); refused when it asks no question on this server.
pub async fn open(classroom: &Classroom, name: &str) -> Result<(), ClassroomError> {
    let on_gpu = classroom.engine.card.kind.is_cuda();
    let (name, params) = match name.split_once('/') {
        Some((experiment, lab)) if experiment == Labs::NAME => {
            let id: LabId = serde_json::from_value(Value::String(lab.to_string()))
                .map_err(|_| ClassroomError::Invalid(format!("no tuning lab called `{lab}`")))?;
            // Plain data: serializing it cannot fail.
            let params = serde_json::to_value(LabParams::reference_of(id, on_gpu));
            (experiment, Some(params.unwrap_or_default()))
        }
        _ if name == Labs::NAME => {
            return Err(ClassroomError::Invalid(
                "choose which tuning lab: `lab/feed-the-gpu`, `lab/stop-waiting` …".into(),
            ));
        }
        _ => (name, None),
    };
    let experiment = crate::experiments::find(name)
        .ok_or_else(|| ClassroomError::Invalid(format!("no experiment called `{name}`")))?;
    let params = params.unwrap_or_else(|| experiment.defaults());
    let question = prediction::pick(experiment.quantities(), &params, on_gpu)
        .and_then(|q| classroom.course.predictions.get(q.key).cloned())
        .ok_or_else(|| {
            ClassroomError::Invalid(format!("`{name}` asks no question on this server"))
        })?;
    let (quantity, unit, stored) = (question.quantity, question.unit, params.to_string());
    classroom
        .db
        .run(move |tx| rounds::open(tx, experiment.name(), &quantity, &unit, &stored))
        .await?;
    Ok(())
}

/// Ends the round (pages stop showing it).
pub async fn close(classroom: &Classroom) -> Result<(), ClassroomError> {
    Ok(classroom.db.run(rounds::close).await?)
}

/// Stores `student`'s prediction for round `round`, while it is open.
pub async fn predict(
    classroom: &Classroom,
    round: i64,
    student: &str,
    predicted: f64,
) -> Result<(), ClassroomError> {
    let open = current(classroom)
        .await?
        .is_some_and(|r| r.id == round && r.status == Status::Open);
    if !open {
        return Err(ClassroomError::Conflict(
            "This round takes no more predictions: the instructor has run it, closed it or opened another.".into(),
        ));
    }
    let student = student.to_string();
    classroom
        .db
        .run(move |tx| rounds::predict(tx, round, &student, predicted))
        .await?;
    Ok(())
}

/// Sets round `round`'s status and error.
async fn mark(classroom: &Classroom, round: i64, status: Status, error: Option<String>) {
    let name = status.name();
    let stored = classroom
        .db
        .run(move |tx| rounds::set_status(tx, round, name, error.as_deref()))
        .await;
    if let Err(error) = stored {
        tracing::warn!(%error, round, "could not store the class round's status");
    }
}

/// Closes predictions and queues the experiment once (the round turns `running` as its
/// job is queued); the worker that completes the job reveals the round in the same
/// transaction ([`crate::db::job_claims::complete`]), so nothing here waits for it.
pub async fn run(classroom: &Classroom) -> Result<(), ClassroomError> {
    let round = current(classroom)
        .await?
        .filter(|r| r.status == Status::Open)
        .ok_or_else(|| ClassroomError::Conflict("No round is open: open one first.".into()))?;
    let Some(entry) = crate::experiments::find(round.experiment) else {
        let why = format!("no experiment `{}`", round.experiment);
        mark(classroom, round.id, Status::Failed, Some(why)).await;
        return Ok(());
    };
    let job = entry
        .prepare(Some(&round.params), &classroom.engine.limits)
        .map_err(|e| ClassroomError::Invalid(e.to_string()))?;
    if let Err(refused) = classroom
        .engine
        .submit_round("instructor-round", round.id, job)
        .await
    {
        let why =
            format!("the queue refused the run ({refused:?}); open the round again and retry");
        mark(classroom, round.id, Status::Failed, Some(why)).await;
    }
    Ok(())
}

/// The round as the instructor page shows it.
#[derive(Debug, Clone)]
pub struct InstructorRound {
    /// The experiment's caption.
    pub title: String,
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

/// The round for the instructor page.
pub fn instructor_view(r: &Round) -> InstructorRound {
    InstructorRound {
        title: r.title.clone(),
        question: r.question.question.clone(),
        status: r.status.name(),
        predictions: r.predictions.len(),
        measured: r
            .measured
            .map(|m| super::calibration::tick_value(m, &r.question.unit)),
        within_2x_percent: r.within_2x_percent(),
        error: r.error.clone(),
    }
}

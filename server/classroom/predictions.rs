//! A playground prediction, scored and stored: before a `del`, a learner predicts how
//! much memory the pool will hold reserved but unallocated after it; the reply's
//! counters measure it, and the score is stored with the learner's other predictions
//! (before the answer goes back: a 2xx means it is on record), with the device the
//! playground lives on. The answer is the playground's reply with `measured` and
//! `prediction` beside its fields, the shape every scored panel gets.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Classroom, ClassroomError};
use crate::db::predictions::{self, PredictionRow};
use crate::experiments::prediction::{self, Measured, PLAYGROUND, Score};

/// The pool counters a playground reply carries (its `pool`), as far as scoring needs.
#[derive(Debug, Deserialize)]
struct Counters {
    pool: Pool,
}

#[derive(Debug, Deserialize)]
struct Pool {
    reserved_bytes: f64,
    allocated_bytes: f64,
}

/// A playground reply with the learner's prediction scored against it.
#[derive(Debug, Serialize)]
pub struct Scored {
    /// The playground's reply, as it was.
    #[serde(flatten)]
    pub view: Map<String, Value>,
    /// Reserved minus allocated after the `del`, in MiB.
    pub measured: Measured,
    /// The prediction scored against it.
    pub prediction: Score,
}

/// Scores `predicted` (MiB, made before `student` freed tensor `freed`) against the
/// playground's reply `view` after the `del`, and stores it.
pub async fn score_free(
    classroom: &Classroom,
    student: &str,
    freed: &str,
    predicted: f64,
    view: Value,
) -> Result<Scored, ClassroomError> {
    let quantity = &PLAYGROUND.quantity;
    let counters: Counters = serde_json::from_value(view.clone()).map_err(|e| {
        ClassroomError::Invalid(format!("the playground's reply has no pool counters: {e}"))
    })?;
    let value = (counters.pool.reserved_bytes - counters.pool.allocated_bytes) / (1024.0 * 1024.0);
    let row = PredictionRow {
        student_id: student.to_string(),
        experiment: PLAYGROUND.name.into(),
        quantity: quantity.key.into(),
        params: serde_json::json!({ "freed": freed }).to_string(),
        predicted,
        measured: value,
        unit: quantity.unit.into(),
        backend: classroom.engine.card.kind.name().into(),
        device: classroom.engine.card.name.clone(),
    };
    classroom
        .db
        .run(move |tx| predictions::record(tx, &row))
        .await?;
    let view = match view {
        Value::Object(fields) => fields,
        _ => Map::new(),
    };
    Ok(Scored {
        view,
        measured: Measured {
            quantity: quantity.key,
            value,
            unit: quantity.unit,
            scale: quantity.scale,
        },
        prediction: prediction::score(predicted, value, quantity.scale),
    })
}

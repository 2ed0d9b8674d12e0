//! A finished run, typed: the experiment's own output, where it came from, the value it
//! measured, the learner's prediction scored against it, and a tuning lab's graded
//! attempt. [`super::backend::Backend::run`] builds it; the worker loop names itself in
//! its provenance and hands it to the transaction that completes the job
//! ([`Outcome::recorded`]); the API returns it serialised flat — the output's fields
//! with `provenance`, `measured` and `prediction` beside them, the shape the panels and
//! the OpenAPI document know. Nothing reads or writes it by key.

use serde::Serialize;
use serde_json::{Map, Value};

use super::provenance::Provenance;
use crate::db::job_claims::MeasuredValue;
use crate::db::lab_attempts::LabAttempt;
use crate::experiments::prediction::{self, Measured, Score};

/// How a run ended, typed (the API's JSON of a finished job).
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The experiment's result, in its output type's own shape.
    #[serde(flatten)]
    pub output: Map<String, Value>,
    /// Where it came from.
    pub provenance: Provenance,
    /// The value a learner predicts for this run, as it measured it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    /// The learner's prediction scored against it, when they made one.
    #[serde(rename = "prediction", skip_serializing_if = "Option::is_none")]
    pub score: Option<Score>,
    /// A tuning lab's graded attempt, for the gradebook (its fields are in `output`).
    #[serde(skip)]
    pub lab: Option<LabAttempt>,
}

impl Outcome {
    /// The outcome of a run whose output serialised to `output`, with `provenance`, the
    /// value it `measured`, the learner's `predicted` value scored against it, and the
    /// lab attempt it made.
    pub fn new(
        output: Value,
        provenance: Provenance,
        measured: Option<Measured>,
        predicted: Option<f64>,
        lab: Option<LabAttempt>,
    ) -> Self {
        let output = match output {
            Value::Object(fields) => fields,
            other => Map::from_iter([("value".to_string(), other)]),
        };
        let score = measured
            .as_ref()
            .zip(predicted)
            .map(|(m, predicted)| prediction::score(predicted, m.value, m.scale));
        Self {
            output,
            provenance,
            measured,
            score,
            lab,
        }
    }

    /// The outcome as the API returns it.
    pub fn to_json(&self) -> Value {
        // Maps of plain data with string keys: serialising cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }

    /// What the completing transaction stores of it: the API's JSON, the measured value
    /// and the lab attempt.
    pub fn recorded(self) -> (Value, Option<MeasuredValue>, Option<LabAttempt>) {
        let measured = self.measured.as_ref().map(|m| MeasuredValue {
            quantity: m.quantity.to_string(),
            unit: m.unit.to_string(),
            value: m.value,
        });
        (self.to_json(), measured, self.lab)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::prediction::Scale;
    use crate::gpu::card::cpu_card;
    use serde_json::json;

    #[test]
    fn the_json_keeps_the_apis_flat_shape_and_the_record_its_typed_parts() {
        let provenance = Provenance::new(&cpu_card("test"), None, "a method".into(), 0.5);
        let measured = Measured {
            quantity: "timing.underestimate_factor",
            value: 4.0,
            unit: "×",
            scale: Scale::Ratio,
        };
        let mut outcome = Outcome::new(
            json!({"gbps": 12.5, "sizes": [1, 2]}),
            provenance,
            Some(measured),
            Some(2.0),
            None,
        );
        outcome.provenance.worker = Some("w1".into());
        let sent = outcome.to_json();
        assert_eq!(sent["gbps"], 12.5);
        assert_eq!(sent["sizes"], json!([1, 2]));
        assert_eq!(sent["provenance"]["backend"], "cpu");
        assert_eq!(sent["provenance"]["worker"], "w1");
        assert_eq!(sent["measured"]["value"], 4.0);
        assert_eq!(sent["measured"]["quantity"], "timing.underestimate_factor");
        assert_eq!(sent["prediction"]["factor"], 2.0, "{sent}");
        assert!(sent.get("lab").is_none());
        let (json, measured, lab) = outcome.recorded();
        assert_eq!(json, sent);
        assert_eq!(measured.map(|m| (m.value, m.unit)), Some((4.0, "×".into())));
        assert!(lab.is_none());

        let bare = Outcome::new(
            json!({"ok": true}),
            Provenance::new(&cpu_card("test"), None, "m".into(), 0.1),
            None,
            Some(3.0),
            None,
        )
        .to_json();
        let keys: Vec<&String> = bare.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["ok", "provenance"],
            "no measurement: no `measured`, no `prediction`, no worker"
        );
        assert!(bare["provenance"].get("worker").is_none());
    }
}

//! Predict, then measure: the one number a learner predicts before an experiment runs,
//! and how a prediction is scored against the measurement.
//!
//! Each experiment declares its [`Quantity`]s (which backend and which parameters each
//! applies to) and reads the measured value off its typed output; the question and the
//! explanation a learner reads are course content (`content/predictions.toml`). A
//! prediction travels with the job (`?predict=`), is scored on the worker as the result
//! is made (so the reveal and the stored row agree), and is written to the database
//! before the result is readable.

use serde::Serialize;
use serde_json::Value;

/// On which backend a quantity is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum On {
    /// Only when the server has a GPU.
    Gpu,
    /// Only on the CPU stand-in.
    Cpu,
    /// On either.
    Any,
}

/// How a prediction is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// A positive amount: scored by the factor between prediction and measurement.
    Ratio,
    /// One of a few values (a size, yes/no): right or wrong. Sizes that are both
    /// positive still get a factor.
    Exact,
}

/// One number a learner may predict.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Quantity {
    /// `experiment.name`, the key of its question in `content/predictions.toml`.
    pub key: &'static str,
    /// Unit as printed after a value (`GB/s`, `×`, `n`); may be empty.
    pub unit: &'static str,
    /// How it is scored.
    pub scale: Scale,
    /// On which backend it is asked.
    pub on: On,
    /// Asked only when this parameter has this value (`("case", "log-every-step")`).
    pub when: Option<(&'static str, &'static str)>,
}

impl Quantity {
    /// Whether it is the question for these parameters on this backend.
    pub fn applies(&self, params: &Value, on_gpu: bool) -> bool {
        let backend = match self.on {
            On::Any => true,
            On::Gpu => on_gpu,
            On::Cpu => !on_gpu,
        };
        backend
            && self.when.is_none_or(|(field, value)| {
                params.get(field).and_then(Value::as_str) == Some(value)
            })
    }
}

/// A panel that is not a queued experiment but still asks a prediction (its question is
/// in `content/predictions.toml` like the experiments').
#[derive(Debug, Clone, Copy)]
pub struct Standalone {
    /// The name stored with its predictions.
    pub name: &'static str,
    /// The slug of its lesson.
    pub lesson: &'static str,
    /// Its caption.
    pub title: &'static str,
    /// What it asks.
    pub quantity: Quantity,
}

/// The allocator playground: before a `del`, how many MiB will be reserved but
/// unallocated (cached, free for reuse) after it.
pub const PLAYGROUND: Standalone = Standalone {
    name: "playground",
    lesson: "gpu-memory",
    title: "Allocator playground",
    quantity: Quantity {
        key: "playground.unallocated_after_free",
        unit: "MiB",
        scale: Scale::Ratio,
        on: On::Any,
        when: None,
    },
};

/// Every standalone panel that asks a prediction.
pub const STANDALONE: &[Standalone] = &[PLAYGROUND];

/// The scale of the quantity `key`, wherever it is declared (ratio when unknown).
pub fn scale_of(key: &str) -> Scale {
    crate::experiments::REGISTRY
        .iter()
        .flat_map(|e| e.quantities())
        .chain(STANDALONE.iter().map(|s| &s.quantity))
        .find(|q| q.key == key)
        .map_or(Scale::Ratio, |q| q.scale)
}

/// The first of `quantities` asked for these parameters on this backend.
pub fn pick<'a>(quantities: &'a [Quantity], params: &Value, on_gpu: bool) -> Option<&'a Quantity> {
    quantities.iter().find(|q| q.applies(params, on_gpu))
}

/// A measured value for a quantity, as a result carries it (`result.measured`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Measured {
    /// [`Quantity::key`].
    pub quantity: &'static str,
    /// The value.
    pub value: f64,
    /// [`Quantity::unit`].
    pub unit: &'static str,
    /// [`Quantity::scale`].
    pub scale: Scale,
}

/// Within this factor a ratio prediction counts as "close".
pub const CLOSE: f64 = 1.5;
/// Within this factor it counts as "within 2×" (the instructor's share).
pub const WITHIN: f64 = 2.0;

/// A prediction scored against its measurement (`result.prediction`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// What the learner predicted.
    pub predicted: f64,
    /// What was measured.
    pub measured: f64,
    /// max(predicted, measured) ÷ min(…), at least 1; `None` when one side is zero
    /// (a "never" answer) and the two differ.
    pub factor: Option<f64>,
    /// `high`, `low` or `right`.
    pub direction: &'static str,
    /// Within [`CLOSE`] (ratio) or exactly right (exact).
    pub close: bool,
    /// Within [`WITHIN`] (ratio) or exactly right (exact).
    pub within_2x: bool,
    /// One line for the learner: "2.3× too high", "right".
    pub verdict: String,
}

/// Largest value a prediction may be (anything bigger is a typo, not a guess).
pub const MAX_PREDICTION: f64 = 1e12;

/// Checks a submitted prediction: a finite number from 0 to [`MAX_PREDICTION`].
pub fn check(predicted: f64) -> Result<f64, String> {
    if predicted.is_finite() && (0.0..=MAX_PREDICTION).contains(&predicted) {
        Ok(predicted)
    } else {
        Err(format!(
            "`predict` must be a number from 0 to {MAX_PREDICTION:e} (your prediction of the measured value), not {predicted}"
        ))
    }
}

/// Scores `predicted` against `measured` on `scale`.
pub fn score(predicted: f64, measured: f64, scale: Scale) -> Score {
    let same = (predicted - measured).abs() <= f64::EPSILON * measured.abs().max(1.0);
    let factor = if same {
        Some(1.0)
    } else if predicted > 0.0 && measured > 0.0 {
        Some(predicted.max(measured) / predicted.min(measured))
    } else {
        None
    };
    let direction = if same {
        "right"
    } else if predicted > measured {
        "high"
    } else {
        "low"
    };
    let (close, within_2x) = match scale {
        Scale::Exact => (same, same),
        Scale::Ratio => {
            let f = factor.unwrap_or(f64::INFINITY);
            (f <= CLOSE, f <= WITHIN)
        }
    };
    let verdict = match (scale, factor) {
        (Scale::Exact, _) if same => "right".to_string(),
        (Scale::Ratio, Some(f)) if f < 1.05 => "spot on (within 5%)".to_string(),
        (_, Some(f)) => format!("{} too {direction}", format_factor(f)),
        (_, None) => "wrong".to_string(),
    };
    Score {
        predicted,
        measured,
        factor,
        direction,
        close,
        within_2x,
        verdict,
    }
}

/// `2.3×`, `14×`, `1.05×`: two or three significant figures.
pub fn format_factor(f: f64) -> String {
    if f >= 10.0 {
        format!("{f:.0}×")
    } else if f >= 1.1 {
        format!("{f:.1}×")
    } else {
        format!("{f:.2}×")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ratio_scores_are_symmetric_factors_with_a_direction() {
        let high = score(23.0, 10.0, Scale::Ratio);
        assert_eq!(high.verdict, "2.3× too high");
        assert!(!high.close && !high.within_2x);
        let low = score(5.0, 8.0, Scale::Ratio);
        assert_eq!(low.direction, "low");
        assert_eq!(low.factor, Some(1.6));
        assert!(!low.close && low.within_2x);
        assert!(
            score(10.2, 10.0, Scale::Ratio)
                .verdict
                .starts_with("spot on")
        );
        let zero = score(0.0, 3.0, Scale::Ratio);
        assert_eq!((zero.factor, zero.within_2x), (None, false));
    }

    #[test]
    fn exact_scores_are_right_or_wrong() {
        let right = score(512.0, 512.0, Scale::Exact);
        assert!(right.close && right.within_2x);
        assert_eq!(right.verdict, "right");
        let wrong = score(1024.0, 512.0, Scale::Exact);
        assert!(
            !wrong.within_2x,
            "a size one step off is wrong, not within 2×"
        );
        assert_eq!(wrong.verdict, "2.0× too high");
        assert_eq!(score(0.0, 512.0, Scale::Exact).verdict, "wrong");
    }

    #[test]
    fn predictions_out_of_range_are_refused() {
        assert!(check(f64::NAN).is_err());
        assert!(check(-1.0).is_err());
        assert!(check(1e13).is_err());
        assert_eq!(check(0.0), Ok(0.0));
    }

    #[test]
    fn a_quantity_applies_by_backend_and_parameter() {
        let q = Quantity {
            key: "break-it.log_slowdown",
            unit: "×",
            scale: Scale::Ratio,
            on: On::Any,
            when: Some(("case", "log-every-step")),
        };
        assert!(q.applies(&json!({"case": "log-every-step"}), false));
        assert!(!q.applies(&json!({"case": "batch-on-host"}), true));
        let gpu_only = Quantity {
            on: On::Gpu,
            when: None,
            ..q
        };
        assert!(!gpu_only.applies(&json!({}), false));
        assert!(gpu_only.applies(&json!({}), true));
    }
}

//! Predict, then measure, summed up: a learner's calibration (how many predictions
//! landed within 1.5× and 2×, whether that improves, where they were furthest off) for
//! the home page and the export, and the class's view per question for the instructor
//! (how the predictions spread around the measured value, the share within 2×, and the
//! most common wrong direction). Scores are recomputed from the stored rows with the
//! same rule the worker used ([`crate::experiments::prediction::score`]).

use serde::Serialize;

use crate::course::predictions::Questions;
use crate::db::predictions::StoredPrediction;
use crate::experiments::prediction::{self, Score};

fn scored(row: &StoredPrediction) -> Score {
    prediction::score(
        row.row.predicted,
        row.row.measured,
        prediction::scale_of(&row.row.quantity),
    )
}

/// The experiment's caption for a quantity key (`transfer.…` → its title).
fn title_of(quantity: &str) -> String {
    let name = quantity.split('.').next().unwrap_or(quantity);
    if let Some(standalone) = prediction::STANDALONE.iter().find(|s| s.name == name) {
        return standalone.title.to_string();
    }
    crate::experiments::find(name).map_or_else(|| name.to_string(), |e| e.title().to_string())
}

/// One prediction far from its measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Miss {
    /// The experiment's title.
    pub experiment: String,
    /// "4.0× too high".
    pub verdict: String,
    /// The lesson paragraph that explains the value.
    pub href: Option<String>,
}

/// A learner's calibration.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Calibration {
    /// Predictions made.
    pub total: usize,
    /// Within 1.5× (or exactly right).
    pub close: usize,
    /// Within 2× (or exactly right).
    pub within_2x: usize,
    /// Share within 2× in the older half of the predictions, then the newer half
    /// (percent), once there are at least four.
    pub trend: Option<(u32, u32)>,
    /// The three furthest off, worst first (only those outside 2×).
    pub furthest: Vec<Miss>,
}

fn share(scores: &[Score]) -> u32 {
    if scores.is_empty() {
        return 0;
    }
    let hits = scores.iter().filter(|s| s.within_2x).count();
    (hits * 100 / scores.len()) as u32
}

/// The calibration of `rows` (one learner's, oldest first).
pub fn calibrate(rows: &[StoredPrediction], questions: &Questions) -> Calibration {
    let scores: Vec<Score> = rows.iter().map(scored).collect();
    let half = scores.len() / 2;
    let mut misses: Vec<(f64, Miss)> = rows
        .iter()
        .zip(&scores)
        .filter(|(_, s)| !s.within_2x)
        .map(|(row, s)| {
            let quantity = &row.row.quantity;
            let miss = Miss {
                experiment: title_of(quantity),
                verdict: s.verdict.clone(),
                href: questions.get(quantity).map(|q| q.href.clone()),
            };
            (s.factor.unwrap_or(f64::INFINITY), miss)
        })
        .collect();
    misses.sort_by(|a, b| b.0.total_cmp(&a.0));
    Calibration {
        total: scores.len(),
        close: scores.iter().filter(|s| s.close).count(),
        within_2x: scores.iter().filter(|s| s.within_2x).count(),
        trend: (scores.len() >= 4).then(|| (share(&scores[..half]), share(&scores[half..]))),
        furthest: misses.into_iter().take(3).map(|(_, m)| m).collect(),
    }
}

/// The class's predictions of one quantity.
#[derive(Debug, Clone, Serialize)]
pub struct ClassView {
    /// The quantity key.
    pub quantity: String,
    /// The experiment's title.
    pub experiment: String,
    /// The question, as content words it.
    pub question: String,
    /// Its unit.
    pub unit: String,
    /// How many predictions.
    pub count: usize,
    /// Every prediction, in the order made.
    pub predicted: Vec<f64>,
    /// The median of the measured values they were scored against.
    pub measured_median: f64,
    /// Percent within 2× (or exactly right).
    pub within_2x_percent: u32,
    /// The most common wrong direction, in a sentence ("64% predicted more than …").
    pub wrong_direction: Option<String>,
}

/// One [`ClassView`] per quantity the class predicted, in the registry's order.
pub fn class_views(rows: &[StoredPrediction], questions: &Questions) -> Vec<ClassView> {
    let mut keys: Vec<&str> = crate::experiments::REGISTRY
        .iter()
        .flat_map(|e| e.quantities())
        .map(|q| q.key)
        .chain(prediction::STANDALONE.iter().map(|s| s.quantity.key))
        .collect();
    for row in rows {
        if !keys.contains(&row.row.quantity.as_str()) {
            keys.push(&row.row.quantity);
        }
    }
    keys.into_iter()
        .filter_map(|key| {
            let mine: Vec<&StoredPrediction> =
                rows.iter().filter(|r| r.row.quantity == key).collect();
            if mine.is_empty() {
                return None;
            }
            let scores: Vec<Score> = mine.iter().map(|r| scored(r)).collect();
            let count = scores.len();
            let wrong: Vec<&Score> = scores.iter().filter(|s| !s.within_2x).collect();
            let high = wrong.iter().filter(|s| s.direction == "high").count();
            let (word, n) = if high * 2 >= wrong.len() {
                ("more", high)
            } else {
                ("less", wrong.len() - high)
            };
            let measured: Vec<f64> = mine.iter().map(|r| r.row.measured).collect();
            let question = questions.get(key);
            Some(ClassView {
                quantity: key.to_string(),
                experiment: title_of(key),
                question: question.map_or_else(|| key.to_string(), |q| q.question.clone()),
                unit: mine[0].row.unit.clone(),
                count,
                predicted: mine.iter().map(|r| r.row.predicted).collect(),
                measured_median: crate::measure::summarize(&measured).map_or(0.0, |s| s.median),
                within_2x_percent: share(&scores),
                wrong_direction: (n > 0).then(|| {
                    format!(
                        "{}% of the class predicted {word} than was measured, by more than 2×",
                        n * 100 / count
                    )
                }),
            })
        })
        .collect()
}

/// A [`ClassView`] laid out as a strip chart: each prediction a dot on a log axis
/// (600 units wide), the measured median a line.
#[derive(Debug, Clone, Serialize)]
pub struct Strip {
    /// The figures.
    pub view: ClassView,
    /// x of each prediction (a "never"/zero answer sits at the left edge).
    pub dots: Vec<f64>,
    /// x of the measured median.
    pub measured_x: f64,
    /// Axis ticks: x and label.
    pub ticks: Vec<(f64, String)>,
    /// The chart in one sentence, for screen readers.
    pub summary: String,
    /// The measured median with its unit.
    pub measured_label: String,
}

fn tick_label(exponent: i32, unit: &str) -> String {
    let value = 10f64.powi(exponent);
    let number = if (-3..=5).contains(&exponent) {
        format!("{value}")
    } else {
        format!("1e{exponent}")
    };
    match unit {
        "" | "n" => number,
        "×" => format!("{number}×"),
        unit => format!("{number} {unit}"),
    }
}

/// Lays `view` out on a log axis spanning every prediction and the measured median.
pub fn strip(view: ClassView) -> Strip {
    let positive = view
        .predicted
        .iter()
        .copied()
        .chain([view.measured_median])
        .filter(|v| *v > 0.0);
    let (lo, hi) = positive.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v.log10()), hi.max(v.log10()))
    });
    let (lo, hi) = if lo.is_finite() {
        (
            lo.floor() as i32,
            (hi.ceil() as i32).max(lo.floor() as i32 + 1),
        )
    } else {
        (0, 1)
    };
    let x = |v: f64| {
        if v > 0.0 {
            40.0 + (v.log10() - f64::from(lo)) / f64::from(hi - lo) * 540.0
        } else {
            12.0
        }
    };
    let summary = format!(
        "{} predictions of {}, on a log scale; measured (median) {}; {}% within 2×.",
        view.count,
        view.experiment,
        tick_value(view.measured_median, &view.unit),
        view.within_2x_percent
    );
    Strip {
        dots: view.predicted.iter().map(|v| x(*v)).collect(),
        measured_x: x(view.measured_median),
        ticks: (lo..=hi)
            .map(|e| (x(10f64.powi(e)), tick_label(e, &view.unit)))
            .collect(),
        summary,
        measured_label: tick_value(view.measured_median, &view.unit),
        view,
    }
}

/// A value with its unit, three significant figures.
pub fn tick_value(value: f64, unit: &str) -> String {
    let number = if value == 0.0 {
        "0".to_string()
    } else if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else {
        let digits = (2 - value.abs().log10().floor() as i32).max(0) as usize;
        format!("{value:.digits$}")
    };
    match unit {
        "" | "n" => number,
        "×" => format!("{number}×"),
        unit => format!("{number} {unit}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::predictions::PredictionRow;

    fn row(student: &str, quantity: &str, predicted: f64, measured: f64) -> StoredPrediction {
        StoredPrediction {
            row: PredictionRow {
                student_id: student.into(),
                experiment: quantity.split('.').next().unwrap().into(),
                quantity: quantity.into(),
                params: "{}".into(),
                predicted,
                measured,
                unit: "×".into(),
                backend: "cpu".into(),
                device: "CPU".into(),
            },
            created_at: "2026-11-26T08:00:00Z".into(),
        }
    }

    #[test]
    fn calibration_counts_bands_trend_and_worst_misses() {
        let rows = vec![
            row("a", "timing.underestimate_factor", 100.0, 10.0),
            row("a", "training.log_every_step_slowdown", 1.0, 3.0),
            row("a", "timing.underestimate_factor", 12.0, 10.0),
            row("a", "streams.best_speedup", 1.8, 2.0),
        ];
        let c = calibrate(&rows, &Questions::new());
        assert_eq!((c.total, c.close, c.within_2x), (4, 2, 2));
        assert_eq!(
            c.trend,
            Some((0, 100)),
            "the newer half all landed within 2×"
        );
        assert_eq!(c.furthest.len(), 2);
        assert_eq!(c.furthest[0].verdict, "10× too high");
        assert_eq!(c.furthest[1].verdict, "3.0× too low");
    }

    #[test]
    fn the_class_view_names_the_most_common_wrong_direction() {
        let rows = vec![
            row("a", "matmul.crossover_size", 64.0, 512.0),
            row("b", "matmul.crossover_size", 128.0, 512.0),
            row("c", "matmul.crossover_size", 512.0, 512.0),
            row("d", "matmul.crossover_size", 4096.0, 512.0),
            row("e", "matmul.crossover_size", 32.0, 512.0),
        ];
        let views = class_views(&rows, &Questions::new());
        assert_eq!(views.len(), 1);
        let v = &views[0];
        assert_eq!(
            (v.count, v.within_2x_percent, v.measured_median),
            (5, 20, 512.0)
        );
        assert_eq!(
            v.wrong_direction.as_deref(),
            Some("60% of the class predicted less than was measured, by more than 2×")
        );
        let strip = strip(views[0].clone());
        assert_eq!(strip.dots.len(), 5);
        assert!(strip.dots.iter().all(|x| (40.0..=580.0).contains(x)));
        assert!(
            strip.dots[2] == strip.measured_x,
            "the right answer sits on the measured line"
        );
        assert_eq!(strip.ticks.first().map(|t| t.0), Some(40.0));
        assert_eq!(tick_value(2.345, "GB/s"), "2.35 GB/s");
    }
}

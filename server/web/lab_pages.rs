//! The Labs page: the five tuning labs (issue 28) in course order, each with its goal,
//! a link to its section in the lesson, and this learner's record: best score,
//! attempts, whether passed, and the latest attempt's graded criteria and explanation,
//! so a result is readable without JavaScript. Also the count of labs passed that the
//! home and completion pages show.

use askama::Template;

use super::page::Layout;
use crate::classroom::learner_flow::long_date;
use crate::course::Course;
use crate::course::html::slugify;
use crate::db::lab_attempts::LabRecord;
use crate::experiments::labs::{self, Verdict};
use crate::gpu::DeviceKind;

/// The Labs page.
#[derive(Template)]
#[template(path = "labs.html", config = "web/askama.toml")]
pub struct LabsPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// Every lab, in course order.
    pub labs: Vec<LabRow>,
    /// Labs passed at least once.
    pub passed: usize,
}

/// One lab on the page.
pub struct LabRow {
    /// The lab's name (`feed-the-gpu`), also the row's fragment id.
    pub id: String,
    /// Its title.
    pub title: &'static str,
    /// What it asks, with its knobs (the panel's no-JavaScript text).
    pub goal: String,
    /// Its section in the lesson: `/lessons/{slug}#lab-…`.
    pub href: String,
    /// The lesson's title.
    pub lesson_title: String,
    /// This learner's record, once attempted.
    pub record: Option<RecordView>,
}

/// A learner's record in one lab, in words.
pub struct RecordView {
    /// Best score in percent.
    pub best_score: f64,
    /// Attempts so far.
    pub attempts: i64,
    /// Passed at least once.
    pub passed: bool,
    /// The latest attempt's verdict in words.
    pub latest_word: &'static str,
    /// Where it ran, in words.
    pub backend: &'static str,
    /// When, as a date in words.
    pub date: String,
    /// Its criteria: name, verdict in words, the numbers.
    pub criteria: Vec<(String, &'static str, String)>,
    /// Its explanation in the lesson's terms.
    pub explanation: Vec<String>,
}

/// The words for a stored verdict (`pass`, `fail`, `inconclusive`, `not-graded`).
fn word(verdict: &str) -> &'static str {
    serde_json::from_value::<Verdict>(serde_json::Value::String(verdict.to_string()))
        .map_or("not recorded", Verdict::word)
}

/// Every lab's row, with `records` (this learner's, any order) where they exist.
pub fn rows(course: &Course, records: &[LabRecord]) -> Vec<LabRow> {
    labs::ALL
        .iter()
        .map(|&id| {
            let lab = labs::lab(id);
            let name = serde_json::to_value(id)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let record = records.iter().find(|r| r.lab == name).map(|r| RecordView {
                best_score: r.best_score,
                attempts: r.attempts,
                passed: r.passed,
                latest_word: word(&r.latest_verdict),
                backend: if DeviceKind::named(&r.latest_backend).is_cuda() {
                    "the GPU"
                } else {
                    "the CPU"
                },
                date: long_date(&r.latest_at),
                criteria: r
                    .latest
                    .criteria
                    .iter()
                    .map(|c| (c.name.clone(), word(&c.verdict), c.detail.clone()))
                    .collect(),
                explanation: r.latest.explanation.clone(),
            });
            LabRow {
                href: format!(
                    "/lessons/{}#{}",
                    lab.lesson,
                    slugify(&format!("Lab: {}", lab.title))
                ),
                lesson_title: course
                    .lesson(lab.lesson)
                    .map_or_else(String::new, |(l, _, _)| l.title.clone()),
                goal: labs::result::describe(&lab),
                title: lab.title,
                id: name,
                record,
            }
        })
        .collect()
}

/// How many of the labs named in `passed` exist (a renamed lab's old rows do not count).
pub fn passed_count(passed: &[String]) -> usize {
    labs::ALL
        .iter()
        .filter(|id| {
            serde_json::to_value(id)
                .ok()
                .and_then(|v| v.as_str().map(|n| passed.iter().any(|p| p == n)))
                .unwrap_or(false)
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_verdicts_read_as_the_panel_words() {
        assert_eq!(word("pass"), "passed");
        assert_eq!(word("fail"), "not yet");
        assert_eq!(word("inconclusive"), "inconclusive, run again");
        assert_eq!(word("bogus"), "not recorded");
        assert_eq!(passed_count(&["stop-waiting".into(), "gone-lab".into()]), 1);
    }
}

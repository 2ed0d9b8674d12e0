//! The questions a live experiment asks before it runs, and the explanations it shows
//! after (`content/predictions.toml`): course content, checked like the lessons.
//!
//! Each table is named by a quantity an experiment declares
//! ([`crate::experiments::Experiment::PREDICT`]); every declared quantity needs one,
//! its `section` must be a heading of the experiment's lesson, its `{placeholders}`
//! the experiment's parameters, and its explanation two or three sentences.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use super::problem::Problem;

/// The content file, relative to the content folder.
pub const FILE: &str = "predictions.toml";

/// How the learner enters a prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Input {
    /// A positive number on a log scale from `min` to `max`.
    Log,
    /// A power of two from `min` to `max`, or "never" (0).
    Pow2,
    /// One of `choices`.
    Choice,
}

/// One answer of a `choice` question.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Choice {
    /// The value stored and compared with the measurement.
    pub value: f64,
    /// What the learner reads.
    pub label: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    question: String,
    input: Input,
    min: Option<f64>,
    max: Option<f64>,
    #[serde(default)]
    choices: Vec<Choice>,
    section: String,
    why: String,
}

/// One question, ready for a panel (served in `/api/device`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Question {
    /// The quantity's key (`transfer.pinned_h2d_gbps`).
    pub quantity: String,
    /// The question; `{field}` stands for the current value of a parameter.
    pub question: String,
    /// The input kind.
    #[schema(value_type = String)]
    pub input: Input,
    /// Lower bound (log, pow2).
    pub min: Option<f64>,
    /// Upper bound (log, pow2).
    pub max: Option<f64>,
    /// The answers of a choice question.
    #[schema(value_type = Vec<Object>)]
    pub choices: Vec<Choice>,
    /// Unit printed after values.
    pub unit: String,
    /// On which backend it is asked (`gpu`, `cpu`, `any`).
    pub on: String,
    /// Asked only when this parameter has this value.
    pub when: Option<(String, String)>,
    /// Why the real value is what it is (text; `code spans` are set as code).
    pub why: String,
    /// The lesson paragraph that explains it.
    pub href: String,
}

/// Every question, by quantity key.
pub type Questions = BTreeMap<String, Question>;

fn sentences(text: &str) -> usize {
    let trimmed = text.trim();
    let ends = trimmed
        .match_indices(['.', '!', '?'])
        .filter(|(i, _)| {
            let next = trimmed[i + 1..].chars().next();
            let before = &trimmed[..*i];
            let abbreviation = ["e.g", "i.e", "vs", "etc"]
                .iter()
                .any(|a| before.ends_with(a));
            next.is_none_or(char::is_whitespace) && !abbreviation
        })
        .count();
    ends.max(usize::from(!trimmed.is_empty()))
}

fn placeholders(text: &str) -> Vec<&str> {
    text.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
        .collect()
}

/// Parses and checks `text` (the file `file`); `anchors` are each lesson's heading ids.
pub fn load(
    file: &str,
    text: &str,
    anchors: &[(String, HashSet<String>)],
    problems: &mut Vec<Problem>,
) -> Questions {
    let entries: BTreeMap<String, Entry> = match toml::from_str(text) {
        Ok(entries) => entries,
        Err(e) => {
            let line = e
                .span()
                .map_or(1, |s| text[..s.start].lines().count().max(1));
            problems.push(Problem::new(file, line, e.message().trim_end().to_string()));
            return Questions::new();
        }
    };
    let line_of = |key: &str| {
        text.find(&format!("[\"{key}\"]"))
            .map_or(1, |at| text[..at].lines().count() + 1)
    };
    let mut out = Questions::new();
    let mut declared = Vec::new();
    // Every asker: name, lesson, parameters (for placeholders) and its quantities.
    let mut askers: Vec<(
        &str,
        &str,
        serde_json::Value,
        &[crate::experiments::Quantity],
    )> = crate::experiments::REGISTRY
        .iter()
        .map(|e| (e.name(), e.lesson(), e.defaults(), e.quantities()))
        .collect();
    for standalone in crate::experiments::prediction::STANDALONE {
        askers.push((
            standalone.name,
            standalone.lesson,
            serde_json::Value::Null,
            std::slice::from_ref(&standalone.quantity),
        ));
    }
    for (name, lesson, params, quantities) in askers {
        for quantity in quantities {
            declared.push(quantity.key);
            let Some(entry) = entries.get(quantity.key) else {
                problems.push(Problem::new(
                    file,
                    1,
                    format!(
                        "no question for `{}` ({name}): add a [\"{}\"] table",
                        quantity.key, quantity.key
                    ),
                ));
                continue;
            };
            let line = line_of(quantity.key);
            let mut fault = |message: String| problems.push(Problem::new(file, line, message));
            match anchors.iter().find(|(slug, _)| slug == lesson) {
                Some((_, ids)) if ids.contains(&entry.section) => {}
                _ => fault(format!(
                    "`section = \"{}\"` is not a heading of the lesson `{lesson}`",
                    entry.section
                )),
            }
            for field in placeholders(&entry.question) {
                if params.get(field).is_none() {
                    fault(format!(
                        "`{{{field}}}` in the question is not a parameter of `{name}`"
                    ));
                }
            }
            let n = sentences(&entry.why);
            if !(1..=3).contains(&n) {
                fault(format!(
                    "`why` has {n} sentences; write two (three at most)"
                ));
            }
            match entry.input {
                Input::Choice if entry.choices.len() < 2 => {
                    fault("`input = \"choice\"` needs at least two `choices`".into());
                }
                Input::Log | Input::Pow2 => match (entry.min, entry.max) {
                    (Some(min), Some(max)) if min > 0.0 && min < max => {}
                    _ => fault("`min` and `max` must be positive with min < max".into()),
                },
                Input::Choice => {}
            }
            out.insert(
                quantity.key.to_string(),
                Question {
                    quantity: quantity.key.to_string(),
                    question: entry.question.clone(),
                    input: entry.input,
                    min: entry.min,
                    max: entry.max,
                    choices: entry.choices.clone(),
                    unit: quantity.unit.to_string(),
                    on: serde_json::to_value(quantity.on)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    when: quantity.when.map(|(f, v)| (f.to_string(), v.to_string())),
                    why: entry.why.trim().to_string(),
                    href: format!("/lessons/{lesson}#{}", entry.section),
                },
            );
        }
    }
    for key in entries.keys() {
        if !declared.contains(&key.as_str()) {
            problems.push(Problem::new(
                file,
                line_of(key),
                format!("`{key}` is not a quantity any experiment measures"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_and_placeholders_are_counted() {
        assert_eq!(sentences("One. Two, e.g. 3.5 GB/s, fast! Three?"), 3);
        assert_eq!(sentences("A, i.e. b. C."), 2);
        assert_eq!(sentences("No full stop"), 1);
        assert_eq!(
            placeholders("At {max_bytes}, with {size}: {"),
            vec!["max_bytes", "size"]
        );
    }

    #[test]
    fn unknown_and_missing_quantities_and_bad_sections_are_problems() {
        let text = r#"
["timing.nonsense"]
question = "?"
input = "log"
min = 1
max = 10
section = "x"
why = "A."
"#;
        let mut problems = Vec::new();
        let found = load("predictions.toml", text, &[], &mut problems);
        assert!(found.is_empty());
        let messages: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
        assert!(
            messages
                .iter()
                .any(|m| m.contains("`timing.nonsense` is not a quantity"))
        );
        assert!(
            messages
                .iter()
                .any(|m| m.contains("no question for `timing.underestimate_factor`"))
        );
    }
}

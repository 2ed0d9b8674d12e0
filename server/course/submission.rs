//! Turning a submitted quiz (an HTML form or a JSON object) into one [`Answer`] per
//! question, in quiz order, or a message that says exactly what is wrong: an unknown
//! question id, a missing answer, or a value of the wrong type. Nothing is stored for a
//! submission that fails here.

use std::collections::BTreeMap;

use super::quiz::{Answer, Question, QuestionKind, Quiz};

/// Form field prefix: the answer to question `x` is field `q.x`.
pub const FIELD_PREFIX: &str = "q.";

/// Answers from decoded form pairs. Multiple-choice boxes left unticked send nothing,
/// so a missing multiple-choice field means "none selected"; any other missing field is
/// an error.
pub fn from_form(quiz: &Quiz, pairs: &[(String, String)]) -> Result<Vec<Answer>, String> {
    let mut values: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (key, value) in pairs {
        let id = key.strip_prefix(FIELD_PREFIX).ok_or_else(|| {
            format!("unknown field `{key}`: answers are sent as `{FIELD_PREFIX}<question id>`")
        })?;
        if quiz.question(id).is_none() {
            return Err(format!("unknown question `{id}` in quiz `{}`", quiz.id));
        }
        values.entry(id).or_default().push(value.as_str());
    }
    let mut missing = Vec::new();
    let mut answers = Vec::new();
    for q in &quiz.questions {
        let given = values.remove(q.id.as_str()).unwrap_or_default();
        let answer = match (&q.kind, given.as_slice()) {
            (QuestionKind::Multiple { .. }, given) => Answer::Choices(
                given
                    .iter()
                    .map(|v| option_index(q, v))
                    .collect::<Result<_, _>>()?,
            ),
            (_, []) | (_, [""]) => {
                missing.push(q.id.as_str());
                continue;
            }
            (QuestionKind::Single { .. }, [one]) => Answer::Choice(option_index(q, one)?),
            (QuestionKind::Numeric { .. }, [one]) => Answer::Number(number(q, one)?),
            (_, _) => {
                return Err(format!(
                    "question `{}` takes one answer, got {}",
                    q.id,
                    given.len()
                ));
            }
        };
        q.validate(&answer)?;
        answers.push(answer);
    }
    if missing.is_empty() {
        Ok(answers)
    } else {
        Err(format!("missing answers for: {}", missing.join(", ")))
    }
}

fn option_index(q: &Question, value: &str) -> Result<usize, String> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|i| *i < q.options().len())
        .ok_or_else(|| format!("question `{}`: `{value}` is not one of its options", q.id))
}

fn number(q: &Question, value: &str) -> Result<f64, String> {
    value
        .trim()
        .replace(',', ".")
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("question `{}`: `{value}` is not a number", q.id))
}

/// Answers from a JSON object `{ "<question id>": <answer>, … }`: an option index for
/// single choice, a list of indexes for multiple choice, a number for numeric.
pub fn from_json(
    quiz: &Quiz,
    answers: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<Answer>, String> {
    if let Some(unknown) = answers.keys().find(|id| quiz.question(id).is_none()) {
        return Err(format!(
            "unknown question `{unknown}` in quiz `{}`",
            quiz.id
        ));
    }
    let missing: Vec<&str> = quiz
        .questions
        .iter()
        .filter(|q| !answers.contains_key(&q.id))
        .map(|q| q.id.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing answers for: {}", missing.join(", ")));
    }
    quiz.questions
        .iter()
        .map(|q| {
            let value = &answers[&q.id];
            let answer = match (&q.kind, value) {
                (QuestionKind::Single { .. }, serde_json::Value::Number(n)) => {
                    n.as_u64().map(|i| Answer::Choice(i as usize))
                }
                (QuestionKind::Multiple { .. }, serde_json::Value::Array(items)) => items
                    .iter()
                    .map(|v| v.as_u64().map(|i| i as usize))
                    .collect::<Option<Vec<_>>>()
                    .map(Answer::Choices),
                (QuestionKind::Numeric { .. }, serde_json::Value::Number(n)) => {
                    n.as_f64().map(Answer::Number)
                }
                _ => None,
            };
            let answer = answer.ok_or_else(|| match q.kind {
                QuestionKind::Single { .. } => {
                    format!("question `{}` takes an option index (a whole number)", q.id)
                }
                QuestionKind::Multiple { .. } => {
                    format!("question `{}` takes a list of option indexes", q.id)
                }
                QuestionKind::Numeric { .. } => format!("question `{}` takes a number", q.id),
            })?;
            q.validate(&answer)?;
            Ok(answer)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::course::quiz::parse;

    const QUIZ: &str = r#"
[[question]]
id = "one"
kind = "single"
prompt = "P"
explanation = "E"
[[question.option]]
text = "A"
[[question.option]]
text = "B"
correct = true

[[question]]
id = "many"
kind = "multiple"
prompt = "P"
explanation = "E"
[[question.option]]
text = "A"
correct = true
[[question.option]]
text = "B"

[[question]]
id = "num"
kind = "numeric"
prompt = "P"
answer = 2.5
tolerance = 0.1
unit = "GiB"
explanation = "E"
"#;

    fn quiz() -> Quiz {
        parse("q", "Q", "quiz.toml", QUIZ).unwrap()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn form_answers_in_quiz_order() {
        let answers = from_form(
            &quiz(),
            &pairs(&[("q.num", "2,5"), ("q.many", "0"), ("q.one", "1")]),
        )
        .unwrap();
        assert_eq!(
            answers,
            vec![
                Answer::Choice(1),
                Answer::Choices(vec![0]),
                Answer::Number(2.5)
            ]
        );
        let none_ticked = from_form(&quiz(), &pairs(&[("q.one", "1"), ("q.num", "3")])).unwrap();
        assert_eq!(none_ticked[1], Answer::Choices(vec![]));
    }

    #[test]
    fn form_errors_say_what_is_wrong() {
        let q = quiz();
        assert!(
            from_form(&q, &pairs(&[("q.one", "1")]))
                .unwrap_err()
                .contains("missing answers for: num")
        );
        assert!(
            from_form(&q, &pairs(&[("q.nope", "1")]))
                .unwrap_err()
                .contains("unknown question `nope`")
        );
        assert!(
            from_form(&q, &pairs(&[("other", "1")]))
                .unwrap_err()
                .contains("unknown field `other`")
        );
        assert!(
            from_form(&q, &pairs(&[("q.one", "7"), ("q.num", "1")]))
                .unwrap_err()
                .contains("not one of its options")
        );
        assert!(
            from_form(&q, &pairs(&[("q.one", "1"), ("q.num", "lots")]))
                .unwrap_err()
                .contains("not a number")
        );
        assert!(
            from_form(
                &q,
                &pairs(&[("q.one", "1"), ("q.one", "0"), ("q.num", "1")])
            )
            .unwrap_err()
            .contains("one answer")
        );
    }

    #[test]
    fn json_answers_are_typed() {
        let q = quiz();
        let ok = serde_json::json!({"one": 1, "many": [0], "num": 2.45});
        assert_eq!(from_json(&q, ok.as_object().unwrap()).unwrap().len(), 3);
        for (body, message) in [
            (
                serde_json::json!({"one": 1, "many": [0]}),
                "missing answers for: num",
            ),
            (
                serde_json::json!({"one": 1, "many": [0], "num": 1, "x": 1}),
                "unknown question `x`",
            ),
            (
                serde_json::json!({"one": "B", "many": [0], "num": 1}),
                "takes an option index",
            ),
            (
                serde_json::json!({"one": 1, "many": 0, "num": 1}),
                "list of option indexes",
            ),
            (
                serde_json::json!({"one": 1, "many": [0], "num": "2.5"}),
                "takes a number",
            ),
            (
                serde_json::json!({"one": -1, "many": [0], "num": 1}),
                "takes an option index",
            ),
            (
                serde_json::json!({"one": 9, "many": [0], "num": 1}),
                "option index from 0 to 1",
            ),
        ] {
            let err = from_json(&q, body.as_object().unwrap()).unwrap_err();
            assert!(err.contains(message), "{body}: {err}");
        }
    }
}

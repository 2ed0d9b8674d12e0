//! Turning a submitted quiz (an HTML form or a JSON object) into one [`Answer`] per
//! question, in quiz order, or every problem with it, each naming the question by the
//! number the page shows (never its internal id): a missing answer, a number that
//! cannot be read, a value of the wrong type. Fields that are no question at all (a
//! tampered form, a wrong API call) are reported without a number. Nothing is stored
//! for a submission that fails here.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::numeric::parse_answer;
use super::quiz::{Answer, Question, QuestionKind, Quiz};

/// Form field prefix: the answer to question `x` is field `q.x`.
pub const FIELD_PREFIX: &str = "q.";

/// One thing wrong with a submission.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerProblem {
    /// The question's id, so a page can mark its field; absent when the problem is not
    /// with one question (an unknown field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The question's number as the page shows it (from 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<usize>,
    /// One sentence, naming the question by its number.
    pub message: String,
}

/// Why a submission was refused: at least one problem, in quiz order.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// Every problem found.
    pub problems: Vec<AnswerProblem>,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sentences: Vec<&str> = self.problems.iter().map(|p| p.message.as_str()).collect();
        f.write_str(&sentences.join(" "))
    }
}

impl Rejected {
    fn general(message: String) -> Self {
        Self {
            problems: vec![AnswerProblem {
                question: None,
                number: None,
                message,
            }],
        }
    }
}

/// Collects per-question problems while answers are read.
struct Checker<'q> {
    quiz: &'q Quiz,
    problems: Vec<AnswerProblem>,
}

impl<'q> Checker<'q> {
    fn new(quiz: &'q Quiz) -> Self {
        Self {
            quiz,
            problems: Vec::new(),
        }
    }

    /// Notes that question `index` has a problem: `clause` follows "Question N: ".
    fn problem(&mut self, index: usize, clause: impl fmt::Display) {
        let q = &self.quiz.questions[index];
        self.problems.push(AnswerProblem {
            question: Some(q.id.clone()),
            number: Some(index + 1),
            message: format!("Question {}: {clause}.", index + 1),
        });
    }

    /// Validates `answer` for question `index`, keeping it when it is well-formed.
    fn accept(&mut self, index: usize, answer: Answer, answers: &mut Vec<Answer>) {
        match self.quiz.questions[index].validate(&answer) {
            Ok(()) => answers.push(answer),
            Err(clause) => self.problem(index, clause),
        }
    }

    fn finish(self, answers: Vec<Answer>) -> Result<Vec<Answer>, Rejected> {
        if self.problems.is_empty() {
            Ok(answers)
        } else {
            Err(Rejected {
                problems: self.problems,
            })
        }
    }
}

/// Answers from decoded form pairs. Multiple-choice boxes left unticked send nothing,
/// so a missing multiple-choice field means "none selected"; any other missing field is
/// a problem.
pub fn from_form(quiz: &Quiz, pairs: &[(String, String)]) -> Result<Vec<Answer>, Rejected> {
    let mut values: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (key, value) in pairs {
        let id = key.strip_prefix(FIELD_PREFIX).ok_or_else(|| {
            Rejected::general(format!(
                "unknown field `{key}`: answers are sent as `{FIELD_PREFIX}<question id>`"
            ))
        })?;
        if quiz.question(id).is_none() {
            return Err(Rejected::general(format!(
                "unknown question `{id}` in this quiz"
            )));
        }
        values.entry(id).or_default().push(value.as_str());
    }
    let mut check = Checker::new(quiz);
    let mut answers = Vec::new();
    for (i, q) in quiz.questions.iter().enumerate() {
        let given = values.remove(q.id.as_str()).unwrap_or_default();
        let answer = match (&q.kind, given.as_slice()) {
            (QuestionKind::Multiple { .. }, given) => {
                match given.iter().map(|v| option_index(q, v)).collect() {
                    Some(picked) => Answer::Choices(picked),
                    None => {
                        check.problem(i, "that is not one of its options");
                        continue;
                    }
                }
            }
            (_, []) | (_, [""]) => {
                check.problem(i, "it is not answered yet");
                continue;
            }
            (QuestionKind::Single { .. }, [one]) => match option_index(q, one) {
                Some(index) => Answer::Choice(index),
                None => {
                    check.problem(i, "that is not one of its options");
                    continue;
                }
            },
            (QuestionKind::Numeric { .. }, [one]) => match parse_answer(one, q.unit()) {
                Ok(x) => Answer::Number(x),
                Err(e) => {
                    check.problem(i, e);
                    continue;
                }
            },
            (_, many) => {
                check.problem(i, format!("it takes one answer, not {}", many.len()));
                continue;
            }
        };
        check.accept(i, answer, &mut answers);
    }
    check.finish(answers)
}

fn option_index(q: &Question, value: &str) -> Option<usize> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|i| *i < q.options().len())
}

/// Answers from a JSON object `{ "<question id>": <answer>, … }`: an option index for
/// single choice, a list of indexes for multiple choice, and for numeric a number or
/// the text the learner typed (read like the form's field).
pub fn from_json(
    quiz: &Quiz,
    answers: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<Answer>, Rejected> {
    if let Some(unknown) = answers.keys().find(|id| quiz.question(id).is_none()) {
        return Err(Rejected::general(format!(
            "unknown question `{unknown}` in this quiz"
        )));
    }
    let mut check = Checker::new(quiz);
    let mut out = Vec::new();
    for (i, q) in quiz.questions.iter().enumerate() {
        let Some(value) = answers.get(&q.id) else {
            check.problem(i, "it is not answered yet");
            continue;
        };
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
            (QuestionKind::Numeric { .. }, serde_json::Value::String(text)) => {
                match parse_answer(text, q.unit()) {
                    Ok(x) => Some(Answer::Number(x)),
                    Err(e) => {
                        check.problem(i, e);
                        continue;
                    }
                }
            }
            _ => None,
        };
        match answer {
            Some(answer) => check.accept(i, answer, &mut out),
            None => {
                let clause = match q.kind {
                    QuestionKind::Single { .. } => {
                        "it takes an option index (a whole number)".to_string()
                    }
                    QuestionKind::Multiple { .. } => {
                        "it takes a list of option indexes".to_string()
                    }
                    QuestionKind::Numeric { .. } => {
                        "it takes a number, or the text typed for it".to_string()
                    }
                };
                check.problem(i, clause);
            }
        }
    }
    check.finish(out)
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
answer = 1048576
tolerance = 0.5
unit = "multiply-adds"
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

    fn messages(rejected: Rejected) -> Vec<(Option<usize>, String)> {
        rejected
            .problems
            .into_iter()
            .map(|p| (p.number, p.message))
            .collect()
    }

    #[test]
    fn form_answers_in_quiz_order_with_numbers_as_printed() {
        let answers = from_form(
            &quiz(),
            &pairs(&[
                ("q.num", " 1,048,576 multiply-adds "),
                ("q.many", "0"),
                ("q.one", "1"),
            ]),
        )
        .unwrap();
        assert_eq!(
            answers,
            vec![
                Answer::Choice(1),
                Answer::Choices(vec![0]),
                Answer::Number(1_048_576.0)
            ]
        );
        let none_ticked = from_form(&quiz(), &pairs(&[("q.one", "1"), ("q.num", "3")])).unwrap();
        assert_eq!(none_ticked[1], Answer::Choices(vec![]));
    }

    #[test]
    fn form_problems_name_question_numbers_never_ids() {
        let q = quiz();
        let all = messages(from_form(&q, &pairs(&[("q.num", "lots")])).unwrap_err());
        assert_eq!(all.len(), 2, "{all:?}");
        assert_eq!(
            all[0],
            (Some(1), "Question 1: it is not answered yet.".into())
        );
        assert_eq!(all[1].0, Some(3));
        assert!(
            all[1].1.starts_with("Question 3: “lots” is not a number"),
            "{all:?}"
        );
        for (_, message) in &all {
            assert!(
                !message.contains("num`") && !message.contains("`one"),
                "{message}"
            );
        }
        let unit =
            messages(from_form(&q, &pairs(&[("q.one", "1"), ("q.num", "3 GiB")])).unwrap_err());
        assert!(
            unit[0].1.contains("multiply-adds") && unit[0].1.contains("GiB"),
            "{unit:?}"
        );
        let rejected = from_form(&q, &pairs(&[("q.one", "7"), ("q.num", "1")])).unwrap_err();
        assert_eq!(rejected.problems[0].question.as_deref(), Some("one"));
        assert!(rejected.to_string().contains("not one of its options"));
        assert!(
            from_form(
                &q,
                &pairs(&[("q.one", "1"), ("q.one", "0"), ("q.num", "1")])
            )
            .unwrap_err()
            .to_string()
            .contains("one answer, not 2")
        );
    }

    #[test]
    fn fields_that_are_no_question_are_refused_without_a_number() {
        let q = quiz();
        let unknown = from_form(&q, &pairs(&[("q.nope", "1")])).unwrap_err();
        assert_eq!(unknown.problems[0].number, None);
        assert!(unknown.to_string().contains("unknown question `nope`"));
        assert!(
            from_form(&q, &pairs(&[("other", "1")]))
                .unwrap_err()
                .to_string()
                .contains("unknown field `other`")
        );
    }

    #[test]
    fn json_answers_are_typed_and_numeric_text_is_read_like_the_form() {
        let q = quiz();
        let ok = serde_json::json!({"one": 1, "many": [0], "num": "1,048,576"});
        assert_eq!(
            from_json(&q, ok.as_object().unwrap()).unwrap()[2],
            Answer::Number(1_048_576.0)
        );
        for (body, message) in [
            (
                serde_json::json!({"one": 1, "many": [0]}),
                "Question 3: it is not answered yet.",
            ),
            (
                serde_json::json!({"one": 1, "many": [0], "num": 1, "x": 1}),
                "unknown question `x`",
            ),
            (
                serde_json::json!({"one": "B", "many": [0], "num": 1}),
                "Question 1: it takes an option index",
            ),
            (
                serde_json::json!({"one": 1, "many": 0, "num": 1}),
                "Question 2: it takes a list of option indexes",
            ),
            (
                serde_json::json!({"one": 1, "many": [0], "num": "lots"}),
                "Question 3: “lots” is not a number",
            ),
            (
                serde_json::json!({"one": 1, "many": [0], "num": [2]}),
                "Question 3: it takes a number",
            ),
            (
                serde_json::json!({"one": -1, "many": [0], "num": 1}),
                "Question 1: it takes an option index",
            ),
            (
                serde_json::json!({"one": 9, "many": [0], "num": 1}),
                "Question 1: pick one option (it takes one option index from 0 to 1)",
            ),
            (
                serde_json::json!({"one": 1, "many": [0, 0], "num": 1}),
                "Question 2: an option is picked twice",
            ),
        ] {
            let err = from_json(&q, body.as_object().unwrap())
                .unwrap_err()
                .to_string();
            assert!(err.contains(message), "{body}: {err}");
        }
    }
}

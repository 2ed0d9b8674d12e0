//! Grading one attempt: each question right or wrong by the rules in [`super::quiz`],
//! the score, and everything the results show — the learner's answer and the key in
//! words, each option marked as chosen and as correct, the explanation and the lesson
//! section that teaches the question.

use std::collections::BTreeSet;

use serde::Serialize;

use super::numeric::display;
use super::quiz::{Answer, Question, QuestionKind, Quiz, passed, percent};
use super::search::SectionRef;

/// The result of one submitted attempt.
#[derive(Debug, Clone, Serialize)]
pub struct Graded {
    /// Questions answered correctly.
    pub correct: usize,
    /// Questions in the quiz.
    pub total: usize,
    /// Score in percent, rounded half up to one decimal.
    pub percent: f64,
    /// Strictly above 75%.
    pub passed: bool,
    /// Per question, in quiz order.
    pub questions: Vec<GradedQuestion>,
}

/// One question's outcome, with the explanation (only ever sent after submission).
#[derive(Debug, Clone, Serialize)]
pub struct GradedQuestion {
    /// The question id.
    pub id: String,
    /// Its 1-based number in the quiz, as the page shows it.
    pub number: usize,
    /// `single`, `multiple` or `numeric`.
    pub kind: &'static str,
    /// The question text.
    pub prompt: String,
    /// Whether the answer was right.
    pub correct: bool,
    /// The student's answer, if any.
    pub given: Option<Answer>,
    /// The student's answer in words.
    pub given_text: String,
    /// The right answer in words (options joined by `; `).
    pub expected: String,
    /// The right answer as a list: each correct option, or the number with its unit.
    pub expected_list: Vec<String>,
    /// Every option in the order shown, with whether the student chose it and whether
    /// it is correct; empty for numeric questions.
    pub choices: Vec<GradedChoice>,
    /// Why.
    pub explanation: String,
    /// The lesson section that teaches it, to reread after a miss.
    pub teaches: Option<SectionRef>,
    /// Whether it counts in the score (a hardware-graded question without a
    /// measurement yet does not).
    pub counted: bool,
}

/// One option of a graded choice question.
#[derive(Debug, Clone, Serialize)]
pub struct GradedChoice {
    /// The option's text.
    pub text: String,
    /// The student ticked or picked it.
    pub chosen: bool,
    /// It is (one of) the right answer(s).
    pub correct: bool,
}

impl Quiz {
    /// Grades a complete set of answers: `answers[i]` answers `questions[i]`.
    pub fn grade(&self, answers: &[Answer]) -> Graded {
        self.grade_with(answers, &std::collections::HashMap::new())
    }

    /// Grades with this server's measurements for its hardware-graded questions
    /// (`measured[question id]`); such a question without one is marked wrong.
    pub fn grade_with(
        &self,
        answers: &[Answer],
        measured: &std::collections::HashMap<String, f64>,
    ) -> Graded {
        let questions: Vec<GradedQuestion> = self
            .questions
            .iter()
            .zip(answers)
            .enumerate()
            .map(|(i, (q, a))| {
                let (correct, expected) = match (&q.measured, measured.get(&q.id)) {
                    (Some(key), Some(value)) => {
                        let given = match a {
                            Answer::Number(x) => *x,
                            Answer::Choice(i) => *i as f64,
                            Answer::Choices(_) => f64::NAN,
                        };
                        let text = format!(
                            "{} {} (measured on this server; answers within {}× of it count)",
                            display(*value),
                            q.unit(),
                            display(key.within)
                        );
                        (key.accepts(given, *value), text)
                    }
                    (Some(_), None) => (
                        false,
                        "not measured on this server yet, so this question did not count: run the experiment in the lesson, then retake the quiz".to_string(),
                    ),
                    (None, _) => (q.is_correct(a), q.expected_text()),
                };
                GradedQuestion {
                    counted: q.measured.is_none() || measured.contains_key(&q.id),
                    id: q.id.clone(),
                    number: i + 1,
                    kind: q.kind_name(),
                    prompt: q.prompt.clone(),
                    correct,
                    given: Some(a.clone()),
                    given_text: q.answer_text(a),
                    expected_list: if q.measured.is_some() {
                        vec![expected.clone()]
                    } else {
                        q.expected_list()
                    },
                    expected,
                    choices: q.choices(a),
                    explanation: q.explanation.clone(),
                    teaches: q.teaches.clone(),
                }
            })
            .collect();
        let correct = questions.iter().filter(|q| q.correct).count();
        let total = questions.iter().filter(|q| q.counted).count();
        Graded {
            correct,
            total,
            percent: percent(correct, total),
            passed: passed(correct, total),
            questions,
        }
    }
}

impl Question {
    /// A student's answer in words, for the results page.
    pub fn answer_text(&self, answer: &Answer) -> String {
        let option = |i: &usize| {
            self.options()
                .get(*i)
                .cloned()
                .unwrap_or_else(|| format!("option {i}"))
        };
        match answer {
            Answer::Choice(i) if self.options().is_empty() => {
                format!("{} {}", display(*i as f64), self.unit())
            }
            Answer::Choice(i) => option(i),
            Answer::Choices(is) if is.is_empty() => "(nothing selected)".to_string(),
            Answer::Choices(is) => is.iter().map(option).collect::<Vec<_>>().join("; "),
            Answer::Number(x) => format!("{} {}", display(*x), self.unit()),
        }
    }

    /// The right answer as a list: the correct options, or the number with its unit.
    pub fn expected_list(&self) -> Vec<String> {
        match &self.kind {
            QuestionKind::Single { options, correct } => vec![options[*correct].clone()],
            QuestionKind::Multiple { options, correct } => {
                correct.iter().map(|i| options[*i].clone()).collect()
            }
            QuestionKind::Numeric { .. } => vec![self.expected_text()],
        }
    }

    /// Every option with whether `answer` chose it and whether it is right.
    pub fn choices(&self, answer: &Answer) -> Vec<GradedChoice> {
        let chosen: BTreeSet<usize> = match answer {
            Answer::Choice(i) => BTreeSet::from([*i]),
            Answer::Choices(is) => is.iter().copied().collect(),
            Answer::Number(_) => BTreeSet::new(),
        };
        let right = |i: usize| match &self.kind {
            QuestionKind::Single { correct, .. } => *correct == i,
            QuestionKind::Multiple { correct, .. } => correct.contains(&i),
            QuestionKind::Numeric { .. } => false,
        };
        self.options()
            .iter()
            .enumerate()
            .map(|(i, text)| GradedChoice {
                text: text.clone(),
                chosen: chosen.contains(&i),
                correct: right(i),
            })
            .collect()
    }

    /// The right answer, in words, for the results page.
    pub fn expected_text(&self) -> String {
        if let Some(key) = &self.measured {
            return format!(
                "this server's own measurement (answers within {}× of it count)",
                display(key.within)
            );
        }
        match &self.kind {
            QuestionKind::Single { options, correct } => options[*correct].clone(),
            QuestionKind::Multiple { options, correct } => correct
                .iter()
                .map(|i| options[*i].as_str())
                .collect::<Vec<_>>()
                .join("; "),
            QuestionKind::Numeric {
                answer,
                tolerance,
                unit,
            } => format!("{} {unit} (± {})", display(*answer), display(*tolerance)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::course::quiz::Answer;
    use crate::course::quiz::fixture::{index_of, quiz};

    #[test]
    fn grading_counts_and_explains() {
        let quiz = quiz();
        let (b, a) = (
            index_of(&quiz.questions[0], "B"),
            index_of(&quiz.questions[1], "A"),
        );
        let graded = quiz.grade(&[
            Answer::Choice(b),
            Answer::Choices(vec![a]),
            Answer::Number(14.9),
        ]);
        assert_eq!((graded.correct, graded.total), (2, 3));
        assert!(!graded.passed);
        assert_eq!(graded.percent, 66.7);
        let many = &graded.questions[1];
        assert_eq!(many.number, 2);
        assert_eq!(many.expected_list.len(), 2);
        let marks: Vec<(bool, bool)> = many.choices.iter().map(|c| (c.chosen, c.correct)).collect();
        assert_eq!(marks.iter().filter(|(chosen, _)| *chosen).count(), 1);
        assert_eq!(marks.iter().filter(|(_, correct)| *correct).count(), 2);
        assert!(graded.questions[2].choices.is_empty());
        assert!(!graded.questions[1].correct);
        let expected = &graded.questions[1].expected;
        assert!(expected == "A; C" || expected == "C; A", "{expected}");
        assert_eq!(graded.questions[0].explanation, "B is right.");
    }

    #[test]
    fn numbers_in_the_results_are_printed_like_the_lessons() {
        let quiz = quiz();
        let num = &quiz.questions[2];
        assert_eq!(
            num.answer_text(&Answer::Number(1_048_576.0)),
            "1,048,576 GiB"
        );
        assert_eq!(num.expected_text(), "14.9 GiB (± 0.05)");
    }
}

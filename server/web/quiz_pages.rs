//! The quiz pages as the learner sees them without JavaScript: the form (again, with
//! their answers kept and each problem beside its question, when a submission was
//! refused) and the results page (each question's options with the learner's choice
//! and the right one marked, a summary of missed questions linking to the section that
//! teaches each, and the way on). The quiz script draws the same marks in place from
//! the JSON the API answers with.

use std::collections::HashMap;

use askama::Template;

use super::page::{Layout, QuizState};
use crate::classroom::learner_flow::Step;
use crate::course::grading::Graded;
use crate::course::html::inline_code;
use crate::course::quiz::Quiz;
use crate::course::search::SectionRef;
use crate::course::submission::{AnswerProblem, FIELD_PREFIX};

/// One option of a question on the form.
pub struct OptionView {
    /// Its index, the value sent.
    pub index: usize,
    /// Its text as HTML (code spans set in `<code>`).
    pub html: String,
    /// Ticked, when the form is shown again with the learner's answers.
    pub checked: bool,
}

/// One question on the form.
pub struct QuestionView {
    /// The question id (field `q.<id>`, element `question-<id>`).
    pub id: String,
    /// 1-based, as shown.
    pub number: usize,
    /// `single`, `multiple` or `numeric`.
    pub kind: &'static str,
    /// The prompt as HTML.
    pub prompt_html: String,
    /// The unit beside a numeric field.
    pub unit: String,
    /// Options of a choice question.
    pub options: Vec<OptionView>,
    /// What the learner typed into a numeric field, when shown again.
    pub typed: String,
    /// What is wrong with this answer, when the submission was refused.
    pub error: Option<String>,
}

/// A quiz as a plain HTML form: questions and options only, never the key.
#[derive(Template)]
#[template(path = "quiz.html", config = "web/askama.toml")]
pub struct QuizPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The quiz's title.
    pub title: &'a str,
    /// The quiz's id (`data-quiz`).
    pub quiz_id: &'a str,
    /// The questions, in order.
    pub questions: Vec<QuestionView>,
    /// Where the form posts.
    pub action: String,
    /// Back to the lesson (or home for the final exam).
    pub back_href: String,
    /// The student's state on this quiz.
    pub state: QuizState,
    /// Script URL for the no-reload enhancement.
    pub script: String,
    /// Problems with a refused submission, in question order.
    pub problems: Vec<AnswerProblem>,
}

impl<'a> QuizPage<'a> {
    /// The form for `quiz`; `given` (the refused submission's fields) and `problems`
    /// fill it in again.
    pub fn new(
        layout: &'a Layout,
        quiz: &'a Quiz,
        state: QuizState,
        script: String,
        given: &[(String, String)],
        problems: Vec<AnswerProblem>,
    ) -> Self {
        let mut values: HashMap<&str, Vec<&str>> = HashMap::new();
        for (key, value) in given {
            if let Some(id) = key.strip_prefix(FIELD_PREFIX) {
                values.entry(id).or_default().push(value);
            }
        }
        let questions = quiz
            .questions
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let mine = values.get(q.id.as_str()).cloned().unwrap_or_default();
                QuestionView {
                    id: q.id.clone(),
                    number: i + 1,
                    kind: q.kind_name(),
                    prompt_html: inline_code(&q.prompt),
                    unit: q.unit().to_string(),
                    options: q
                        .options()
                        .iter()
                        .enumerate()
                        .map(|(index, text)| OptionView {
                            index,
                            html: inline_code(text),
                            checked: mine.iter().any(|v| v.trim() == index.to_string()),
                        })
                        .collect(),
                    typed: if q.options().is_empty() {
                        mine.first().map(|v| v.to_string()).unwrap_or_default()
                    } else {
                        String::new()
                    },
                    error: problems
                        .iter()
                        .find(|p| p.question.as_deref() == Some(q.id.as_str()))
                        .map(|p| p.message.clone()),
                }
            })
            .collect();
        let (action, back_href) = match quiz.id.as_str() {
            crate::course::FINAL_EXAM_ID => ("/final-exam".to_string(), "/".to_string()),
            id => (format!("/lessons/{id}/quiz"), format!("/lessons/{id}")),
        };
        Self {
            layout,
            title: &quiz.title,
            quiz_id: &quiz.id,
            questions,
            action,
            back_href,
            state,
            script,
            problems,
        }
    }
}

/// One option of a graded question.
pub struct ChoiceView {
    /// The option's text as HTML.
    pub html: String,
    /// The learner chose it.
    pub chosen: bool,
    /// It is (one of) the right answer(s).
    pub correct: bool,
}

/// One graded question on the results page.
pub struct GradedView {
    /// The question id (`#question-<id>` on the quiz page).
    pub id: String,
    /// 1-based.
    pub number: usize,
    /// Whether the answer was right.
    pub correct: bool,
    /// The prompt as HTML.
    pub prompt_html: String,
    /// Options with the learner's choice and the key marked; empty for numeric.
    pub choices: Vec<ChoiceView>,
    /// A numeric question's answer as given, in words.
    pub given_text: String,
    /// A numeric question's right answer, in words.
    pub expected_text: String,
    /// The explanation as HTML.
    pub explanation_html: String,
    /// Where the lesson teaches it.
    pub teaches: Option<SectionRef>,
}

/// The result of one attempt, with every explanation.
#[derive(Template)]
#[template(path = "quiz_result.html", config = "web/askama.toml")]
pub struct QuizResultPage<'a> {
    /// Shared layout.
    pub layout: &'a Layout,
    /// The quiz's title.
    pub title: &'a str,
    /// The graded attempt.
    pub graded: &'a Graded,
    /// Each question, marked.
    pub questions: Vec<GradedView>,
    /// The learner's state on this quiz after this attempt.
    pub state: QuizState,
    /// Where to go from here.
    pub steps: Vec<Step>,
}

impl<'a> QuizResultPage<'a> {
    /// The results page of `graded`.
    pub fn new(
        layout: &'a Layout,
        quiz: &'a Quiz,
        graded: &'a Graded,
        state: QuizState,
        steps: Vec<Step>,
    ) -> Self {
        let questions = graded
            .questions
            .iter()
            .map(|q| GradedView {
                id: q.id.clone(),
                number: q.number,
                correct: q.correct,
                prompt_html: inline_code(&q.prompt),
                choices: q
                    .choices
                    .iter()
                    .map(|c| ChoiceView {
                        html: inline_code(&c.text),
                        chosen: c.chosen,
                        correct: c.correct,
                    })
                    .collect(),
                given_text: q.given_text.clone(),
                expected_text: q.expected_list.join(", "),
                explanation_html: inline_code(&q.explanation),
                teaches: q.teaches.clone(),
            })
            .collect();
        Self {
            layout,
            title: &quiz.title,
            graded,
            questions,
            state,
            steps,
        }
    }

    /// The questions answered wrongly, for the summary.
    pub fn missed(&self) -> Vec<&GradedView> {
        self.questions.iter().filter(|q| !q.correct).collect()
    }
}

//! The learner's path over HTTP (issue 16): numbers typed as the lessons print them,
//! refused quiz submissions shown again with a message per question, results that
//! mark choices and point missed questions at the section that teaches them, the way
//! from lesson to quiz to the next lesson, the final exam and the completion page,
//! "Continue where you left off", search, the code downloads, the about page and the
//! device status. The browser-side half is tests/e2e/lib/flow*.mjs.

mod downloads;
mod pages;
mod quiz_flow;

use gpulab::course::quiz::{QuestionKind, Quiz};

/// The first numeric question of `quiz`, with its index.
pub(crate) fn numeric(quiz: &Quiz) -> Option<(usize, &gpulab::course::quiz::Question)> {
    quiz.questions
        .iter()
        .enumerate()
        .find(|(_, q)| matches!(q.kind, QuestionKind::Numeric { .. }))
}

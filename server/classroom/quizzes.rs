//! A quiz attempt graded and kept: hardware-graded questions are graded against this
//! class's own measurements ([`super::measurements`]), and the attempt and the learner's
//! standing on the quiz after it are one transaction, so a saved attempt is never
//! answered with an error, nor an unsaved one with a success. The web layer keeps what
//! is HTTP's: the per-student attempt rate (a 429) and the pages.

use std::collections::HashMap;

use super::{Classroom, ClassroomError};
use crate::course::grading::Graded;
use crate::course::quiz::{Answer, Quiz};
use crate::db::progress::{self, QuizProgress};

impl Classroom {
    /// Grades `answers` to `quiz` for `student` and stores the attempt; returns after the
    /// commit, with the student's best standing on the quiz including this attempt.
    pub async fn grade_and_store(
        &self,
        student: &str,
        quiz: &Quiz,
        answers: Vec<Answer>,
    ) -> Result<(Graded, Option<QuizProgress>), ClassroomError> {
        // Hardware-graded questions: this server's own measurement is the key.
        let mut measured = HashMap::new();
        for q in &quiz.questions {
            if let Some(key) = &q.measured
                && let Some(value) = self.measurements.value_for(key).await
            {
                measured.insert(q.id.clone(), value);
            }
        }
        let graded = quiz.grade_with(&answers, &measured);
        let (id, quiz_id, stored) = (student.to_string(), quiz.id.clone(), graded.clone());
        let best = self
            .db
            .run(move |tx| {
                progress::record_attempt(tx, &id, &quiz_id, &stored)?;
                Ok(progress::progress(tx, &id)?
                    .into_iter()
                    .find(|p| p.quiz_id == quiz_id))
            })
            .await?;
        Ok((graded, best))
    }
}

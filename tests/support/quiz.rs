//! Quiz answers built from a quiz's own key, and the student's progress as the API
//! reports it.

use gpulab::course::quiz::{QuestionKind, Quiz};
use serde_json::{Value, json};

use super::TestApp;

/// The measurement every test app starts with for each hardware-graded question
/// ([`super::spawn_with`] records it), so answers built from the key stay right.
pub(crate) const MEASURED_SEED: f64 = 7.0;

/// Records [`MEASURED_SEED`] as this server's measurement for every hardware-graded
/// question of the course.
pub(crate) fn seed_measurements(state: &gpulab::web::state::AppState) {
    for quiz in &state.course.quizzes {
        for key in quiz.questions.iter().filter_map(|q| q.measured.as_ref()) {
            state
                .classroom
                .measurements
                .record_for(key, &state.engine.limits, MEASURED_SEED)
                .expect("the measurement is stored");
        }
    }
}

/// Form pairs answering every question of `quiz`, right or wrong.
pub(crate) fn form_answers(quiz: &Quiz, right: bool) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for q in &quiz.questions {
        let key = format!("q.{}", q.id);
        if q.measured.is_some() {
            let value = if right {
                MEASURED_SEED
            } else {
                MEASURED_SEED * 100.0
            };
            pairs.push((key, value.to_string()));
            continue;
        }
        match &q.kind {
            QuestionKind::Single { correct, options } => {
                let pick = if right {
                    *correct
                } else {
                    (correct + 1) % options.len()
                };
                pairs.push((key, pick.to_string()));
            }
            QuestionKind::Multiple { correct, .. } => {
                if right {
                    pairs.extend(correct.iter().map(|i| (key.clone(), i.to_string())));
                }
            }
            QuestionKind::Numeric {
                answer, tolerance, ..
            } => {
                let value = if right {
                    *answer
                } else {
                    answer + 10.0 * tolerance + 1.0
                };
                pairs.push((key, value.to_string()));
            }
        }
    }
    pairs
}

/// A JSON answer object with the first `right` questions answered correctly.
pub(crate) fn json_answers(quiz: &Quiz, right: usize) -> Value {
    let mut answers = serde_json::Map::new();
    for (i, q) in quiz.questions.iter().enumerate() {
        let ok = i < right;
        if q.measured.is_some() {
            let value = if ok {
                MEASURED_SEED
            } else {
                MEASURED_SEED * 100.0
            };
            answers.insert(q.id.clone(), json!(value));
            continue;
        }
        let value = match &q.kind {
            QuestionKind::Single { correct, options } => json!(if ok {
                *correct
            } else {
                (correct + 1) % options.len()
            }),
            QuestionKind::Multiple { correct, .. } => json!(if ok {
                correct.iter().copied().collect::<Vec<_>>()
            } else {
                vec![]
            }),
            QuestionKind::Numeric {
                answer, tolerance, ..
            } => json!(if ok {
                *answer
            } else {
                answer + 10.0 * tolerance + 1.0
            }),
        };
        answers.insert(q.id.clone(), value);
    }
    json!({ "answers": answers })
}

/// This student's progress (`GET /api/me/progress`).
pub(crate) async fn progress(app: &TestApp, client: &reqwest::Client) -> Value {
    super::client::json(client, &format!("{}/api/me/progress", app.base)).await
}

/// Posts `answers` (a JSON body) to quiz `quiz_id` as `client`; returns the response.
pub(crate) async fn submit(
    app: &TestApp,
    client: &reqwest::Client,
    quiz_id: &str,
    answers: &Value,
) -> reqwest::Response {
    client
        .post(format!("{}/api/quizzes/{quiz_id}/attempts", app.base))
        .json(answers)
        .send()
        .await
        .unwrap()
}

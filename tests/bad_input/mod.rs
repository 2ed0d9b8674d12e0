//! Hand-written hostile input, on top of what quiz.rs, experiments.rs and gradebook.rs
//! already check. [`experiments`] is generated from the experiment registry (every
//! rule's bounds, wrong types, unknown fields, malformed and oversized bodies); this
//! file covers the other JSON endpoints (playground, quiz attempts) and form pages;
//! [`requests`] sends mislabelled bodies, forged cookies, traversal on /static, very
//! long URLs byte for byte and odd ids; [`people`] tries wrong instructor credentials
//! and display names built to break HTML and spreadsheets. The rule in each: a 4xx
//! that says what was wrong (JSON on /api, a page elsewhere), never a 5xx, never data
//! that should not be shown.

mod experiments;
mod people;
mod requests;

use serde_json::Value;

use crate::support::hostile::{client, html_error, json_error, post_as};
use crate::support::quiz::json_answers;
use crate::support::spawn;

/// Values no numeric field accepts: out of range, the wrong type, or not JSON at all.
pub(crate) const BAD_VALUES: &[&str] = &[
    "18446744073709551616",
    "-1",
    "-9223372036854775809",
    "1e308",
    "1e400",
    "-0",
    "\"NaN\"",
    "\"Infinity\"",
    "\"1024\"",
    "NaN",
    "Infinity",
    "true",
    "null",
    "[]",
    "{}",
    "[1024]",
];

/// Bodies that are not JSON, or not an object: each must be a 400.
pub(crate) fn malformed_bodies() -> Vec<Vec<u8>> {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    vec![
        b"{".to_vec(),
        b"{\"name\":}".to_vec(),
        b"{} trailing".to_vec(),
        b"null".to_vec(),
        b"\"text\"".to_vec(),
        b"42".to_vec(),
        deep.into_bytes(),
        vec![0xff, 0xfe, 0x7b, 0x7d],
    ]
}

#[tokio::test]
async fn malformed_json_is_a_400_with_a_json_message_on_the_playground_and_quizzes() {
    let app = spawn().await;
    let bodies = malformed_bodies();
    for path in [
        "/api/playground/tensors",
        "/api/playground/config",
        "/api/quizzes/why-gpus/attempts",
    ] {
        for body in &bodies {
            let response = post_as(&app, path, "application/json", body.clone()).await;
            let context = format!(
                "{path} {}",
                String::from_utf8_lossy(&body[..body.len().min(20)])
            );
            json_error(response, &[400], &context).await;
        }
    }
}

#[tokio::test]
async fn unknown_fields_are_refused_by_the_playground() {
    // Experiments are covered in experiments.rs, quiz attempts in quiz.rs.
    let app = spawn().await;
    let response = client()
        .post(format!("{}/api/playground/tensors", app.base))
        .header("content-type", "application/json")
        .body(r#"{"name": "w", "mib": 1, "device": "cuda:1"}"#)
        .send()
        .await
        .unwrap();
    let message = json_error(response, &[400], "playground").await;
    assert!(message.contains("unknown field"), "{message}");
}

#[tokio::test]
async fn wrong_types_and_extreme_numbers_get_a_4xx_on_the_playground_and_quizzes() {
    let app = spawn().await;
    // Sizes no number can be, and tensor names of the wrong type or that the
    // playground refuses.
    let sizes = BAD_VALUES
        .iter()
        .map(|value| format!(r#"{{"name": "w", "mib": {value}}}"#));
    let long = format!("\"{}\"", "a".repeat(33));
    let names = [
        "1",
        "null",
        "[]",
        "{}",
        "true",
        "\"\"",
        "\"../x\"",
        "\"a b\"",
        "\"\\u0000\"",
        "\"\u{fc}\"",
        long.as_str(),
    ]
    .map(|value| format!(r#"{{"name": {value}, "mib": 1}}"#));
    for body in sizes.chain(names) {
        let response = post_as(
            &app,
            "/api/playground/tensors",
            "application/json",
            body.clone().into_bytes(),
        )
        .await;
        json_error(response, &[400, 422], &body).await;
    }
    // Quiz answers: a single-choice question given each bad value, and a numeric one
    // given numbers JSON cannot hold.
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    let single = quiz
        .questions
        .iter()
        .find(|q| q.kind_name() == "single")
        .unwrap()
        .id
        .clone();
    let numeric = quiz
        .questions
        .iter()
        .find(|q| q.kind_name() == "numeric")
        .map(|q| q.id.clone());
    let url = format!("{}/api/quizzes/why-gpus/attempts", app.base);
    let mut cases: Vec<(String, &str)> = BAD_VALUES
        .iter()
        .chain(&["18446744073709551615", "1.5", "100000"])
        .map(|v| (single.clone(), *v))
        .collect();
    if let Some(id) = numeric {
        cases.extend(
            ["1e400", "\"NaN\"", "\"lots\"", "\"1e3 GB\"", "[1]", "null"].map(|v| (id.clone(), v)),
        );
    }
    for (question, value) in cases {
        let mut answers = json_answers(&quiz, 0);
        answers["answers"][&question] = Value::from("@@");
        let body = answers.to_string().replace("\"@@\"", value);
        let response = client()
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        json_error(response, &[400, 422], &format!("{question} = {value}")).await;
    }
}

#[tokio::test]
async fn oversized_bodies_get_413_with_a_json_or_html_message() {
    let app = spawn().await;
    // Experiment routes are covered in experiments.rs.
    let api = ["/api/playground/tensors", "/api/quizzes/why-gpus/attempts"];
    let pages = [
        "/lessons/why-gpus/quiz",
        "/final-exam",
        "/me/name",
        "/me/reset",
        "/me/resume",
        "/instructor/login",
        "/instructor/students/rename",
        "/instructor/students/merge",
    ];
    for size in [64 * 1024 + 1, 1 << 20] {
        let body = vec![b' '; size];
        for path in api {
            let response = post_as(&app, path, "application/json", body.clone()).await;
            json_error(response, &[413], &format!("{path} {size} B")).await;
        }
        for path in pages {
            let response = post_as(
                &app,
                path,
                "application/x-www-form-urlencoded",
                body.clone(),
            )
            .await;
            html_error(response, &[413], &format!("{path} {size} B")).await;
        }
    }
}

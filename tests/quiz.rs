//! Quizzes end to end over HTTP: taking a quiz through the HTML form and through JSON,
//! best score and attempts, progress on the home page, no answer key before submission,
//! and a clear 4xx (with nothing stored) for every kind of bad input.

use gpulab::course::quiz::Answer;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::client::{json, post_form, send_json, set_cookie, set_name, text};
use crate::support::quiz::submit;
use crate::support::quiz::{form_answers, json_answers, progress};
use crate::support::{spawn, student};

#[tokio::test]
async fn a_new_student_takes_a_quiz_through_the_form() {
    let app = spawn().await;
    let client = crate::support::new_browser();
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    let page = client
        .get(format!("{}/lessons/why-gpus/quiz", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(set_cookie(&page).contains("HttpOnly"));
    let html = page.text().await.unwrap();
    assert!(html.contains("more than 75%"));
    for q in &quiz.questions {
        assert!(html.contains(&format!("name=\"q.{}\"", q.id)));
        assert!(
            !html.contains(&crate::support::escaped(&q.explanation)),
            "explanation of {} leaked before submission",
            q.id
        );
    }
    for marker in ["checked", "data-correct", "correct=\"", "\"correct\""] {
        assert!(!html.contains(marker), "`{marker}` would give the key away");
    }
    for q in quiz.questions.iter().filter(|q| q.kind_name() == "numeric") {
        assert!(
            !html.contains(&q.expected_text()),
            "numeric answer of {} leaked",
            q.id
        );
    }

    let wrong = client
        .post(format!("{}/lessons/why-gpus/quiz", app.base))
        .form(&form_answers(&quiz, false))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::OK);
    let html = wrong.text().await.unwrap();
    assert!(
        html.contains("Not passed yet") && html.contains("more than 75%"),
        "{html}"
    );
    assert!(
        html.contains(&crate::support::escaped(&quiz.questions[0].explanation)),
        "explanations after submission"
    );

    let right = client
        .post(format!("{}/lessons/why-gpus/quiz", app.base))
        .form(&form_answers(&quiz, true))
        .send()
        .await
        .unwrap();
    let html = right.text().await.unwrap();
    assert!(html.contains("Passed.") && html.contains("100%"), "{html}");

    let p = progress(&app, &client).await;
    let row = &p["progress"][0];
    assert_eq!(row["quiz_id"], "why-gpus");
    assert_eq!(row["attempts"], 2);
    assert_eq!(row["best_percent"], 100.0);
    assert_eq!(row["passed"], true);
    let home = text(&client, &app.base).await;
    assert!(
        home.contains("Passed · best 100% · 2 attempts"),
        "home shows progress"
    );
    assert!(home.contains("1 of 10 quizzes passed"));
}

#[tokio::test]
async fn json_attempts_score_and_keep_the_best() {
    let app = spawn().await;
    let client = student();
    let quiz = app.state.course.quiz("gpu-memory").unwrap().clone();
    let public: Value = json(&client, &format!("{}/api/quizzes/gpu-memory", app.base)).await;
    let text = public.to_string();
    assert!(
        !text.contains("correct") && !text.contains("explanation") && !text.contains("tolerance"),
        "{text}"
    );
    assert_eq!(
        public["questions"].as_array().unwrap().len(),
        quiz.questions.len()
    );

    let n = quiz.questions.len();
    let url = format!("{}/api/quizzes/gpu-memory/attempts", app.base);
    let full: Value = send_json(client.post(&url).json(&json_answers(&quiz, n))).await;
    assert_eq!(full["correct"], n);
    assert_eq!(full["passed"], true);
    assert!(full["questions"][0]["explanation"].as_str().unwrap().len() > 10);
    let fewer: Value = send_json(client.post(&url).json(&json_answers(&quiz, 1))).await;
    assert_eq!(fewer["correct"], 1);
    assert_eq!(fewer["passed"], false);
    let p = progress(&app, &client).await;
    assert_eq!(p["progress"][0]["attempts"], 2);
    assert_eq!(p["progress"][0]["best_correct"], n);
}

#[tokio::test]
async fn exactly_three_quarters_is_not_a_pass_over_http() {
    let app = spawn().await;
    let quiz = app.state.course.quiz("final-exam").unwrap().clone();
    let n = quiz.questions.len();
    assert_eq!(
        n % 4,
        0,
        "the final exam has a multiple of four questions so 75% is reachable"
    );
    let body: Value = submit(
        &app,
        &student(),
        "final-exam",
        &json_answers(&quiz, n * 3 / 4),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(body["percent"], 75.0);
    assert_eq!(body["passed"], false);
}

#[tokio::test]
async fn bad_input_gets_a_clear_4xx_and_stores_nothing() {
    let app = spawn().await;
    let client = student();
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    let url = format!("{}/api/quizzes/why-gpus/attempts", app.base);
    let mut missing = json_answers(&quiz, 2);
    missing["answers"]
        .as_object_mut()
        .unwrap()
        .remove(&quiz.questions[0].id);
    let mut wrong_type = json_answers(&quiz, 2);
    wrong_type["answers"][&quiz.questions[0].id] = json!("a string");
    let mut unknown = json_answers(&quiz, 2);
    unknown["answers"]["no-such-question"] = json!(1);
    let cases: Vec<(reqwest::RequestBuilder, StatusCode, &str)> = vec![
        (
            client.post(&url).body("{not json"),
            StatusCode::BAD_REQUEST,
            "must be JSON",
        ),
        (
            client.post(&url).body(vec![0xff, 0xfe, 0x00]),
            StatusCode::BAD_REQUEST,
            "not valid UTF-8",
        ),
        (
            client.post(&url).json(&json!({"answers": {}, "extra": 1})),
            StatusCode::BAD_REQUEST,
            "unknown field",
        ),
        (
            client.post(&url).json(&missing),
            StatusCode::UNPROCESSABLE_ENTITY,
            "Question 1: it is not answered yet.",
        ),
        (
            client.post(&url).json(&wrong_type),
            StatusCode::UNPROCESSABLE_ENTITY,
            "takes",
        ),
        (
            client.post(&url).json(&unknown),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown question `no-such-question`",
        ),
        (
            client
                .post(format!("{}/api/quizzes/nope/attempts", app.base))
                .json(&json!({"answers": {}})),
            StatusCode::NOT_FOUND,
            "no page",
        ),
        (
            client.post(&url).body(vec![b' '; 100_000]),
            StatusCode::PAYLOAD_TOO_LARGE,
            "",
        ),
    ];
    for (request, status, message) in cases {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), status, "{message}");
        let text = response.text().await.unwrap();
        assert!(text.contains(message), "expected `{message}` in {text}");
    }
    let form = post_form(
        &client,
        &format!("{}/lessons/why-gpus/quiz", app.base),
        &[("q.nope", "1")],
    )
    .await;
    assert_eq!(form.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        form.text()
            .await
            .unwrap()
            .contains("unknown question `nope`")
    );
    let empty = post_form(
        &client,
        &format!("{}/lessons/why-gpus/quiz", app.base),
        &[("x", "1")],
    )
    .await;
    assert_eq!(empty.status(), StatusCode::UNPROCESSABLE_ENTITY);

    let p = progress(&app, &client).await;
    assert_eq!(
        p["attempts"].as_array().unwrap().len(),
        0,
        "nothing stored for rejected submissions"
    );
}

#[tokio::test]
async fn names_are_escaped_and_students_can_export_and_reset() {
    let app = spawn().await;
    let client = student();
    let name = "<script>alert('x')</script> & co";
    let saved = set_name(&app, &client, name).await;
    assert_eq!(saved.status(), StatusCode::SEE_OTHER);
    let home = text(&client, &app.base).await;
    assert!(!home.contains("<script>alert"), "names must be escaped");
    assert!(home.contains(&crate::support::escaped(name)));
    let too_long = post_form(
        &client,
        &format!("{}/me/name", app.base),
        &[("display_name", &"x".repeat(61))],
    )
    .await;
    assert_eq!(too_long.status(), StatusCode::UNPROCESSABLE_ENTITY);

    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    submit(&app, &client, "why-gpus", &json_answers(&quiz, 3)).await;
    let export = client
        .get(format!("{}/me/export", app.base))
        .send()
        .await
        .unwrap();
    assert!(
        export.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("attachment")
    );
    let data: Value = export.json().await.unwrap();
    assert_eq!(data["display_name"], name);
    assert_eq!(data["attempts"].as_array().unwrap().len(), 1);

    let refused = post_form(
        &client,
        &format!("{}/me/reset", app.base),
        &[("confirm", "no")],
    )
    .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let reset = post_form(
        &client,
        &format!("{}/me/reset", app.base),
        &[("confirm", "yes")],
    )
    .await;
    assert_eq!(reset.status(), StatusCode::SEE_OTHER);
    let data = progress(&app, &client).await;
    assert_eq!(data["attempts"].as_array().unwrap().len(), 0);
    assert_eq!(data["display_name"], Value::Null);
}

#[tokio::test]
async fn a_forged_cookie_gets_a_fresh_identity() {
    let app = spawn().await;
    let response = reqwest::Client::new()
        .get(format!("{}/api/me/progress", app.base))
        .header("cookie", "gpulab_student=../../etc/passwd")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(set_cookie(&response).starts_with("gpulab_student="));
    let data: Value = response.json().await.unwrap();
    assert_eq!(data["student_id"].as_str().unwrap().len(), 32);
}

#[test]
fn the_helpers_build_right_answers() {
    let quiz = gpulab::course::Course::load(&gpulab::course::ContentSource::Embedded)
        .unwrap()
        .quiz("why-gpus")
        .unwrap()
        .clone();
    let answers: Vec<Answer> =
        gpulab::course::submission::from_form(&quiz, &form_answers(&quiz, true)).unwrap();
    assert!(quiz.grade(&answers).passed);
}

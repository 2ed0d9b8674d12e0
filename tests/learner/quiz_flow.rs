//! Quizzes as a learner meets them: typed numbers, refused answers kept with their
//! message, marked results, missed questions linked to their section, the way on.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::client::{post_form, send_json, text};
use crate::support::quiz::{form_answers, json_answers};
use crate::support::{spawn, student};

use super::numeric;

#[tokio::test]
async fn numbers_are_read_as_the_lessons_print_them() {
    let app = spawn().await;
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    let (index, q) = numeric(&quiz).expect("lesson 1's quiz has a numeric question");
    let gpulab::course::quiz::QuestionKind::Numeric { answer, .. } = q.kind else {
        unreachable!()
    };
    let printed = format!(
        " {} {} ",
        gpulab::course::numeric::display(answer),
        q.unit()
    );
    let client = student();
    let mut answers = json_answers(&quiz, quiz.questions.len());
    answers["answers"][&q.id] = json!(printed);
    let graded: Value = send_json(
        client
            .post(format!("{}/api/quizzes/why-gpus/attempts", app.base))
            .json(&answers),
    )
    .await;
    assert_eq!(
        graded["questions"][index]["correct"], true,
        "{printed}: {graded}"
    );

    let mut form = form_answers(&quiz, true);
    let field = format!("q.{}", q.id);
    for (key, value) in &mut form {
        if *key == field {
            *value = printed.clone();
        }
    }
    let page = client
        .post(format!("{}/lessons/why-gpus/quiz", app.base))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.text().await.unwrap().contains("100%"));
}

#[tokio::test]
async fn a_refused_form_shows_the_quiz_again_with_each_message_by_number() {
    let app = spawn().await;
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    let (index, q) = numeric(&quiz).unwrap();
    let mut form = form_answers(&quiz, true);
    let field = format!("q.{}", q.id);
    form.retain(|(key, _)| *key != quiz.questions[0].id && !key.ends_with(&quiz.questions[0].id));
    for (key, value) in &mut form {
        if *key == field {
            *value = "lots of them".into();
        }
    }
    let client = student();
    let response = client
        .post(format!("{}/lessons/why-gpus/quiz", app.base))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = response.text().await.unwrap();
    assert!(
        html.contains("<form class=\"quiz-form\""),
        "the quiz again, not an error page"
    );
    assert!(html.contains("2 answers need another look"), "{html}");
    assert!(html.contains("Question 1: it is not answered yet."));
    let number = format!("Question {}: “lots of them” is not a number", index + 1);
    assert!(html.contains(&number), "{number}");
    assert!(
        !html.contains(&format!("question `{}`", q.id)),
        "no internal ids"
    );
    assert!(
        html.contains("value=\"lots of them\""),
        "the typed text is kept"
    );
    assert!(
        html.contains(&format!("aria-describedby=\"error-{}\"", q.id)),
        "the field points at its message"
    );
    assert!(html.contains(" checked"), "ticked answers are kept");
    let progress = text(&client, &format!("{}/api/me/progress", app.base)).await;
    assert!(
        progress.contains("\"attempts\":[]"),
        "nothing stored: {progress}"
    );

    let api: Value = send_json(
        client
            .post(format!("{}/api/quizzes/why-gpus/attempts", app.base))
            .json(&json!({"answers": {}})),
    )
    .await;
    let problems = api["error"]["problems"].as_array().unwrap();
    assert_eq!(problems.len(), quiz.questions.len());
    assert_eq!(problems[0]["question"], quiz.questions[0].id.as_str());
    assert_eq!(problems[0]["number"], 1);
    assert_eq!(
        problems[0]["message"],
        "Question 1: it is not answered yet."
    );
}

#[tokio::test]
async fn results_mark_choices_and_send_missed_questions_to_their_section() {
    let app = spawn().await;
    let quiz = app.state.course.quiz("async-and-timing").unwrap().clone();
    let client = student();
    let html = client
        .post(format!("{}/lessons/async-and-timing/quiz", app.base))
        .form(&form_answers(&quiz, false))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("Not passed yet"));
    let missed = format!("{} questions to look at again", quiz.questions.len());
    assert!(html.contains(&missed), "{missed}");
    let lesson = text(&client, &format!("{}/lessons/async-and-timing", app.base)).await;
    let mut sections = 0;
    for q in &quiz.questions {
        let teaches = q.teaches.as_ref().expect("every question has a section");
        let (path, id) = teaches.href.split_once('#').unwrap();
        assert_eq!(path, "/lessons/async-and-timing");
        assert!(
            lesson.contains(&format!("id=\"{id}\"")),
            "{id} is on the page"
        );
        assert!(html.contains(&format!("href=\"{}\"", teaches.href)));
        sections += 1;
    }
    assert_eq!(sections, quiz.questions.len());
    // Choice questions list every option, the learner's and the right ones marked.
    assert!(html.contains("badge-chosen\">Your answer<"));
    assert!(html.contains("badge-key\">Correct answer<"));
    let multiple = quiz
        .questions
        .iter()
        .find(|q| q.kind_name() == "multiple")
        .unwrap();
    let keys = multiple.expected_list();
    assert!(keys.len() > 1);
    assert!(
        !html.contains(&keys.join("; ")),
        "a multi-select key is a list, not a joined string"
    );
    assert!(html.contains("href=\"/lessons/async-and-timing\">Review the lesson</a>"));
    assert!(html.contains("Retake the quiz"));

    let passed = client
        .post(format!("{}/lessons/async-and-timing/quiz", app.base))
        .form(&form_answers(&quiz, true))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let next = &app
        .state
        .course
        .lesson("async-and-timing")
        .unwrap()
        .2
        .unwrap()
        .slug;
    assert!(
        passed.contains(&format!("href=\"/lessons/{next}\">Next lesson:")),
        "{passed}"
    );
    assert!(passed.contains("Review the lesson"));
    assert!(
        passed.contains("Passed · best 100% · 2 attempts"),
        "status line"
    );
}

#[tokio::test]
async fn the_json_result_carries_the_status_line_and_the_way_on() {
    let app = spawn().await;
    let last = app.state.course.lessons.last().unwrap().slug.clone();
    let quiz = app.state.course.quiz(&last).unwrap().clone();
    let client = student();
    let url = format!("{}/api/quizzes/{last}/attempts", app.base);
    let body: Value = send_json(
        client
            .post(&url)
            .json(&json_answers(&quiz, quiz.questions.len())),
    )
    .await;
    assert_eq!(body["passed"], true);
    assert_eq!(body["state"]["class"], "passed");
    assert!(
        body["state"]["label"]
            .as_str()
            .unwrap()
            .starts_with("Passed · best 100%")
    );
    assert_eq!(
        body["next"][0]["href"], "/final-exam",
        "lesson 9 leads to the exam"
    );
    assert_eq!(body["next"][0]["primary"], true);
    assert_eq!(body["next"][1]["label"], "Review the lesson");
    let q = &body["questions"][0];
    assert_eq!(q["number"], 1);
    assert!(
        q["choices"].is_array() && q["teaches"]["href"].is_string(),
        "{q}"
    );
}

#[tokio::test]
async fn scores_are_rounded_not_cut() {
    let app = spawn().await;
    let quiz = app.state.course.quiz("final-exam").unwrap().clone();
    let n = quiz.questions.len();
    let right = n - 2;
    let body: Value = send_json(
        student()
            .post(format!("{}/api/quizzes/final-exam/attempts", app.base))
            .json(&json_answers(&quiz, right)),
    )
    .await;
    let exact = right as f64 * 100.0 / n as f64;
    assert_eq!(
        body["percent"],
        (exact * 10.0).round() / 10.0,
        "{right} of {n}"
    );
    assert_eq!(
        gpulab::course::quiz::percent(22, 24),
        91.7,
        "the issue's example"
    );
}

#[tokio::test]
async fn passing_the_exam_opens_a_printable_completion_page() {
    let app = spawn().await;
    let client = student();
    let page = text(&client, &format!("{}/final-exam/complete", app.base)).await;
    assert!(page.contains("once you pass the final exam"), "{page}");
    let exam = app.state.course.quiz("final-exam").unwrap().clone();
    crate::support::client::set_name(&app, &client, "Ada").await;
    let result = post_form(
        &client,
        &format!("{}/final-exam", app.base),
        &form_answers(&exam, true)
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Vec<_>>(),
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(result.contains("href=\"/final-exam/complete\">See your completion page"));
    let page = text(&client, &format!("{}/final-exam/complete", app.base)).await;
    assert!(
        page.contains("Ada") && page.contains("passed the final exam on"),
        "{page}"
    );
    assert!(page.contains(&format!(
        "({} of {} questions)",
        exam.questions.len(),
        exam.questions.len()
    )));
    for lesson in &app.state.course.lessons {
        assert!(
            page.contains(&crate::support::escaped(&lesson.title)),
            "{}",
            lesson.title
        );
    }
    assert!(
        page.contains("data-print"),
        "a print button for readers with JavaScript"
    );
    let home = text(&client, &app.base).await;
    assert!(
        home.contains("href=\"/final-exam/complete\">Your completion page"),
        "continue"
    );
}

//! Pages around the quizzes: the lesson page's way to its quiz and the chapter list,
//! the home page's "Continue where you left off", device status and saved name,
//! search, and the about page's address and device card.

use reqwest::StatusCode;

use crate::support::client::{set_name, text};
use crate::support::quiz::json_answers;
use crate::support::{spawn, student};

#[tokio::test]
async fn every_lesson_ends_with_its_quiz_and_lists_the_chapters() {
    let app = spawn().await;
    let course = &app.state.course;
    for lesson in &course.lessons {
        let html = app
            .get(&format!("/lessons/{}", lesson.slug))
            .await
            .text()
            .await
            .unwrap();
        let cta = format!(
            "href=\"/lessons/{}/quiz\">Take the lesson quiz →</a>",
            lesson.slug
        );
        assert!(html.contains(&cta), "{}", lesson.slug);
        let current = format!("href=\"/lessons/{}\" aria-current=\"page\"", lesson.slug);
        assert_eq!(
            html.matches(&current).count(),
            2,
            "sidebar and the phone menu: {}",
            lesson.slug
        );
        for other in &course.lessons {
            assert!(html.contains(&format!("href=\"/lessons/{}\"", other.slug)));
        }
        assert!(html.contains("<details class=\"contents-mobile\">"));
        assert!(html.contains("href=\"#top\">Back to top"));
        assert!(html.contains("class=\"device-status device-cpu\"") || html.contains("device-gpu"));
        assert!(html.contains(&app.state.device.headline), "{}", lesson.slug);
    }
    let last = course.lessons.last().unwrap();
    let html = app
        .get(&format!("/lessons/{}", last.slug))
        .await
        .text()
        .await
        .unwrap();
    assert!(html.contains("href=\"/final-exam\"><span>Finished the lessons?</span>"));
}

#[tokio::test]
async fn lesson_pages_stay_the_same_for_every_learner() {
    let app = spawn().await;
    let (ann, bob) = (student(), student());
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    crate::support::quiz::submit(&app, &ann, "why-gpus", &json_answers(&quiz, 9)).await;
    let url = format!("{}/lessons/why-gpus", app.base);
    assert_eq!(text(&ann, &url).await, text(&bob, &url).await);
}

#[tokio::test]
async fn home_offers_to_continue_shows_the_device_and_confirms_a_saved_name() {
    let app = spawn().await;
    let client = student();
    let home = text(&client, &app.base).await;
    let first = &app.state.course.lessons[0];
    assert!(home.contains("Continue where you left off"));
    assert!(home.contains(&format!(
        "class=\"button continue-link\" href=\"/lessons/{}\"",
        first.slug
    )));
    assert!(home.contains(&app.state.device.headline));
    assert!(!home.contains("Saved"));

    let quiz = app.state.course.quiz(&first.slug).unwrap().clone();
    crate::support::quiz::submit(
        &app,
        &client,
        &first.slug,
        &json_answers(&quiz, quiz.questions.len()),
    )
    .await;
    let second = &app.state.course.lessons[1];
    let home = text(&client, &app.base).await;
    assert!(
        home.contains(&format!(
            "class=\"button continue-link\" href=\"/lessons/{}\"",
            second.slug
        )),
        "{home}"
    );

    let saved = set_name(&app, &client, "Grace").await;
    assert_eq!(saved.status(), StatusCode::SEE_OTHER);
    let to = saved.headers()["location"].to_str().unwrap().to_string();
    assert_eq!(to, "/?saved=name#you-heading");
    let home = text(&client, &format!("{}{to}", app.base)).await;
    assert!(home.contains("role=\"status\">✓ Saved.</span>"), "{home}");
}

#[tokio::test]
async fn search_finds_sections_and_quiz_explanations() {
    let app = spawn().await;
    let html = text(&student(), &format!("{}/search?q=pinned+memory", app.base)).await;
    assert!(html.contains("search-hit-lesson"), "{html}");
    assert!(
        html.contains("href=\"/lessons/where-tensors-live#pinned-memory-and-non-blocking-copies\"")
    );
    assert!(html.contains("<mark>"));
    // A word from a quiz explanation finds that question: the exam item on DDP loss.
    let quiz = app.state.course.quiz("final-exam").unwrap();
    let q = quiz
        .questions
        .iter()
        .find(|q| q.id == "exam-ddp-loss")
        .unwrap();
    assert!(
        q.explanation.contains("all_reduce"),
        "fixture: {}",
        q.explanation
    );
    let html = text(&student(), &format!("{}/search?q=all_reduce", app.base)).await;
    assert!(
        html.contains("href=\"/final-exam#question-exam-ddp-loss\""),
        "{html}"
    );
    let none = text(&student(), &format!("{}/search?q=xyzzyplugh", app.base)).await;
    assert!(none.contains("Nothing in the course matches"));
    let empty = app.get("/search").await;
    assert_eq!(empty.status(), StatusCode::OK);
    let long = app
        .get(&format!("/search?q={}", "memory+".repeat(400)))
        .await;
    assert_eq!(long.status(), StatusCode::OK);
    let hostile = text(&student(), &format!("{}/search?q=%3Cscript%3E", app.base)).await;
    assert!(!hostile.contains("<script>"), "the query is escaped");
}

#[tokio::test]
async fn about_shows_the_address_it_was_served_from_and_the_device_card() {
    let app = spawn().await;
    let html = reqwest::Client::new()
        .get(format!("{}/about", app.base))
        .header("host", "gpulab.example.org:8123")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("href=\"http://gpulab.example.org:8123/\""),
        "{html}"
    );
    assert!(
        !html.contains("The live device check appears here"),
        "no placeholder"
    );
    assert!(html.contains("data-experiment=\"device-card\""));
    assert!(html.contains("<dt>Host CPU</dt>"));
    assert!(html.contains(&app.state.device.headline));
    let odd = reqwest::Client::new()
        .get(format!("{}/about", app.base))
        .header("host", "evil\"><script>")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!odd.contains("<script>"), "a strange Host is not echoed");
}

//! The tuning labs from the outside: a graded lab run shows, without JavaScript, on the
//! Labs page (every lab, its lesson section, the latest attempt's criteria), on the
//! home page as labs passed, and in the instructor's gradebook even for a student who
//! has taken no quiz.

use serde_json::{Value, json};

use crate::support::client::{instructor_page, set_name, text};
use crate::support::jobs::run;

const TOKEN: &str = "lab-instructor-token-0123456789abcdef";

/// Every parameter of the lab experiment (the API overlays none), with `knobs` on top.
fn body(lab: &str, knobs: Value) -> Value {
    let mut b = json!({
        "lab": lab, "batch": 64, "data_on_device": false, "pinned": false,
        "non_blocking": false, "log_every": 1, "timer_sync": false, "precision": "fp32",
        "optimizer": "adam", "accumulation": 1, "recompute": false
    });
    for (k, v) in knobs.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

/// The visible words of `html` (tags dropped, whitespace collapsed, `&#39;` as `'`).
fn words(html: &str) -> String {
    let text: String = html
        .split('<')
        .map(|s| s.split_once('>').map_or(s, |(_, t)| t))
        .collect::<Vec<_>>()
        .join(" ");
    text.replace("&#39;", "'")
        .replace("&#x27;", "'")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn a_graded_lab_shows_on_the_labs_page_home_and_gradebook() {
    let app = crate::support::spawn_with_token(TOKEN).await;
    let before = words(&app.get("/labs").await.text().await.unwrap());
    assert_eq!(before.matches("Not attempted yet.").count(), 5, "{before}");
    assert!(before.contains("Labs passed: 0 of 5"));

    set_name(&app, &app.client, "Lab Only Learner").await;
    let result = run(
        &app,
        "/api/experiments/lab",
        body("stop-waiting", json!({"log_every": 50, "timer_sync": true})),
    )
    .await;
    let passed = result["verdict"] == "pass";
    let page = app.get("/labs").await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    let shown = words(&html);
    assert_eq!(shown.matches("Not attempted yet.").count(), 4);
    assert!(
        shown.contains(&format!("Labs passed: {} of 5", u8::from(passed))),
        "{shown}"
    );
    let word = match result["verdict"].as_str().unwrap() {
        "pass" => "passed",
        "fail" => "not yet",
        "inconclusive" => "inconclusive, run again",
        _ => "not graded on this backend",
    };
    assert!(
        shown.contains(&format!("Your latest attempt: {word}")),
        "{shown}"
    );
    assert!(shown.contains("Graded on the CPU") || shown.contains("Graded on the GPU"));
    // Every criterion of the result is readable on the page, with its numbers.
    for c in result["criteria"].as_array().unwrap() {
        let line = format!("{}:", c["name"].as_str().unwrap());
        assert!(shown.contains(&line), "{line} in {shown}");
        assert!(shown.contains(c["detail"].as_str().unwrap()), "{c}");
    }
    assert!(shown.contains(result["explanation"][0].as_str().unwrap()));

    // Each lab links to its own section of its lesson.
    for href in html.split("href=\"/lessons/").skip(1) {
        let href = href.split('"').next().unwrap();
        let (slug, fragment) = href.split_once('#').expect("a section link");
        let lesson = text(&app.client, &format!("{}/lessons/{slug}", app.base)).await;
        assert!(
            lesson.contains(&format!("id=\"{fragment}\"")),
            "/lessons/{slug} has #{fragment}"
        );
    }

    let home = words(&app.get("/").await.text().await.unwrap());
    assert!(
        home.contains(&format!("Tuning labs passed: {} of 5", u8::from(passed))),
        "{home}"
    );
    let done = words(&app.get("/final-exam/complete").await.text().await.unwrap());
    assert!(done.contains("Tuning labs passed so far:"), "{done}");

    // No quiz taken: the student is a gradebook row all the same, with the lab's cell.
    let gradebook = instructor_page(&app, TOKEN, "/instructor").await;
    assert!(
        gradebook.contains("Lab Only Learner"),
        "lab-only student listed"
    );
    let csv = instructor_page(&app, TOKEN, "/instructor/grades.csv").await;
    assert!(
        csv.lines()
            .any(|l| l.contains("Lab Only Learner") && l.contains("lab:stop-waiting")),
        "{csv}"
    );
}

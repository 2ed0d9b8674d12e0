//! Findings 7, 8 and 9: flooding quiz attempts must not grow the database without bound,
//! the instructor token must not be guessable at thousands of tries a second (nor weak),
//! and the grade file must not hand out the students' cookies.

use std::sync::LazyLock;

use reqwest::StatusCode;
use serde_json::Value;

use super::{Server, client_from, scale};
use crate::support::quiz::json_answers;
use crate::support::student_id;

const TOKEN: &str = "abuse-test-instructor-token-0123456789abcdef";

/// A complete attempt at lesson 1's quiz, half right.
static ANSWERS: LazyLock<Value> = LazyLock::new(|| {
    let course = gpulab::course::Course::load(&gpulab::course::ContentSource::Embedded).unwrap();
    let quiz = course.quiz("why-gpus").unwrap();
    json_answers(quiz, quiz.questions.len() / 2)
});

async fn attempt(client: &reqwest::Client, base: &str) -> StatusCode {
    client
        .post(format!("{base}/api/quizzes/why-gpus/attempts"))
        .json(&*ANSWERS)
        .send()
        .await
        .unwrap()
        .status()
}

fn students_in(database: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(database).unwrap();
    conn.query_row("SELECT COUNT(*) FROM students", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn attempt_floods_store_nothing_without_a_cookie_and_little_with_one() {
    let server = Server::start(&[]);
    let base = server.base().to_string();
    let cookieless = client_from("127.0.0.1", None);
    let flood = scale(2_000, 40_000);
    for _ in 0..flood {
        assert_eq!(attempt(&cookieless, &base).await, StatusCode::FORBIDDEN);
    }
    assert_eq!(
        students_in(&server.database()),
        0,
        "a cookieless attempt made a student"
    );
    // One student with a cookie: the per-student rate stops the flood. The default is
    // 20 attempts a minute, refilled one every 3 s: a slow, busy box may see a refill
    // during the 100 posts, and exactly those are allowed.
    let greedy = client_from("127.0.0.1", Some(&student_id()));
    let started = std::time::Instant::now();
    let mut statuses = Vec::new();
    for _ in 0..100 {
        statuses.push(attempt(&greedy, &base).await);
    }
    let refills = (started.elapsed().as_secs_f64() / 3.0).ceil() as usize;
    let stored = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(stored + refused, 100, "only 200 and 429: {statuses:?}");
    assert!(
        statuses[..20].iter().all(|s| *s == StatusCode::OK),
        "{statuses:?}"
    );
    assert!(
        refused > 0 && stored <= 20 + refills,
        "{stored} stored, {refused} refused, in {refills} refills' time"
    );
    let size = std::fs::metadata(server.database()).unwrap().len()
        + std::fs::metadata(server.database().with_extension("db-wal")).map_or(0, |m| m.len());
    assert!(
        size < 2 << 20,
        "database and WAL are {size} bytes after the flood"
    );
}

#[tokio::test]
async fn guessing_the_instructor_token_is_paused_and_weak_tokens_refused() {
    let server = Server::start_with(&[], &[("GPULAB_INSTRUCTOR_TOKEN", TOKEN)], &[]);
    let base = server.base();
    let guesser = client_from("127.0.0.1", None);
    let started = std::time::Instant::now();
    let mut answers = Vec::new();
    for i in 0..scale(30, 300) {
        let response = guesser
            .post(format!("{base}/instructor/login"))
            .form(&[("token", format!("guess-{i}"))])
            .send()
            .await
            .unwrap();
        answers.push((
            response.status(),
            response.headers().get("retry-after").cloned(),
        ));
    }
    let paused = answers
        .iter()
        .filter(|(s, retry)| *s == StatusCode::TOO_MANY_REQUESTS && retry.is_some())
        .count();
    // Five free guesses; the pause is 1 s after the fifth and doubles with each guess
    // judged after it ended, so a slow run of guesses earns one more judged guess per
    // doubling of the time it took.
    let elapsed = started.elapsed().as_secs_f64();
    let judged_bound = 6 + (elapsed + 1.0).log2().ceil() as usize;
    assert!(
        answers.len() - paused <= judged_bound,
        "{} of {} guesses judged in {elapsed:.1} s: {answers:?}",
        answers.len() - paused,
        answers.len()
    );
    // Bearer guesses count too: refused now, or (when a pause had just ended) judged
    // and then refused.
    let mut bearer = Vec::new();
    while bearer.len() < 3 && bearer.last() != Some(&StatusCode::TOO_MANY_REQUESTS) {
        let response = guesser
            .get(format!("{base}/instructor/grades.csv"))
            .bearer_auth("another-guess")
            .send()
            .await
            .unwrap();
        bearer.push(response.status());
    }
    assert_eq!(
        bearer.last(),
        Some(&StatusCode::TOO_MANY_REQUESTS),
        "{bearer:?}"
    );
    // Another machine may still sign in with the right token.
    let instructor = client_from("127.0.0.2", None);
    let csv = instructor
        .get(format!("{base}/instructor/grades.csv"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(csv.status(), StatusCode::OK);

    // A short token: the server refuses to start and says how to make a good one.
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .args(["serve", "--addr", "127.0.0.1:0", "--database"])
        .arg(dir.path().join("x.db"))
        .env("GPULAB_INSTRUCTOR_TOKEN", "hunter2")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("at least 32") && stderr.contains("openssl rand -hex 32"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_grade_file_and_gradebook_never_show_a_students_cookie() {
    let server = Server::start_with(&[], &[("GPULAB_INSTRUCTOR_TOKEN", TOKEN)], &[]);
    let base = server.base().to_string();
    let ids: Vec<String> = (0..scale(5, 120)).map(|_| student_id()).collect();
    for id in &ids {
        let student = client_from("127.0.0.1", Some(id));
        assert_eq!(attempt(&student, &base).await, StatusCode::OK);
    }
    let instructor = client_from("127.0.0.2", None);
    let csv = instructor
        .get(format!("{base}/instructor/grades.csv"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let page = instructor
        .get(format!("{base}/instructor"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for id in &ids {
        assert!(!csv.contains(&id[..16]), "the CSV carries a cookie value");
        assert!(
            !page.contains(&id[..8]),
            "the gradebook shows part of a cookie value"
        );
    }
    assert_eq!(csv.lines().count(), ids.len() + 1, "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.starts_with("s-")), "{csv}");
    // The gradebook pages its rows.
    let rows = page.matches("<tr><th scope=\"row\">").count();
    assert!(rows <= 100, "{rows} rows on one page");
}

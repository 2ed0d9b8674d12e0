//! A class of 300 (written straight into the database, as 300 browsers would leave it):
//! sorting, filtering and paging happen over the whole class on the server, headers say
//! how the table is sorted, and the class figures and stuck flags are right.

use reqwest::StatusCode;

use super::{TOKEN, instructor_get};
use crate::support::spawn_with_token;

const STUDENTS: usize = 300;
const QUESTIONS: u32 = 10;

fn name(i: usize) -> String {
    format!("Student {i:03}")
}

/// Student i scored i % 11 of 10 on the first quiz at minute i; every 50th student also
/// failed the second quiz three times (stuck).
async fn seed(app: &crate::support::TestApp, first: String, second: String) {
    app.state
        .db
        .run(move |tx| {
            for i in 0..STUDENTS {
                let id = format!("{i:032x}");
                let at = format!("2026-01-01T{:02}:{:02}:00.000Z", i / 60, i % 60);
                tx.execute("INSERT INTO students (id, display_name) VALUES (?1, ?2)", gpulab::params![id, name(i)])?;
                let correct = (i % 11) as u32;
                tx.execute(
                    "INSERT INTO attempts (student_id, quiz_id, correct, total, passed, submitted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    gpulab::params![id, first, correct, QUESTIONS, correct * 100 > QUESTIONS * 75, at],
                )?;
                if i % 50 == 0 {
                    for _ in 0..3 {
                        tx.execute(
                            "INSERT INTO attempts (student_id, quiz_id, correct, total, passed, submitted_at) VALUES (?1, ?2, 0, ?3, 0, ?4)",
                            gpulab::params![id, second, QUESTIONS, at],
                        )?;
                    }
                }
            }
            Ok(())
        })
        .await
        .unwrap();
}

fn row_names(html: &str) -> Vec<String> {
    html.split("<th scope=\"row\">")
        .skip(1)
        .filter_map(|s| s.split(" <span class=\"pseudonym\">").next())
        .filter(|s| s.starts_with("Student "))
        .map(str::to_string)
        .collect()
}

async fn page(app: &crate::support::TestApp, query: &str) -> String {
    let response = instructor_get(app, &format!("/instructor?{query}")).await;
    assert_eq!(response.status(), StatusCode::OK, "{query}");
    response.text().await.unwrap()
}

#[tokio::test]
async fn the_whole_class_is_sorted_filtered_and_paged_on_the_server() {
    let app = spawn_with_token(TOKEN).await;
    let quizzes: Vec<String> = app
        .state
        .course
        .quizzes
        .iter()
        .map(|q| q.id.clone())
        .collect();
    seed(&app, quizzes[0].clone(), quizzes[1].clone()).await;

    // By best score on the first quiz, highest first, ties by name: page 2 continues
    // exactly where the class-wide order says.
    let mut expected: Vec<usize> = (0..STUDENTS).collect();
    expected.sort_by_key(|i| (std::cmp::Reverse(i % 11), *i));
    let html = page(&app, &format!("sort={}&dir=desc&page=2", quizzes[0])).await;
    let shown = row_names(&html);
    assert_eq!(shown.len(), 100);
    assert_eq!(shown[0], name(expected[100]));
    assert_eq!(shown[99], name(expected[199]));
    assert_eq!(
        html.matches("aria-sort=").count(),
        1,
        "only the sorted column says so"
    );
    assert!(
        html.contains(&format!(
            "aria-sort=\"descending\"><a href=\"/instructor?sort={}&#38;dir=asc\"",
            quizzes[0]
        )),
        "its link reverses the order"
    );
    assert!(html.contains("300 of 300 students match; page 2 of 3"));

    // Last active, most recent first by default.
    let html = page(&app, "sort=active").await;
    assert_eq!(row_names(&html)[0], name(299));
    assert!(html.contains("2026-01-01 04:59 UTC"));

    // Filters: a name, and the stuck flag, over all 300.
    let html = page(&app, "q=student+12").await;
    assert_eq!(row_names(&html), (120..130).map(name).collect::<Vec<_>>());
    let html = page(&app, "show=stuck").await;
    let stuck: Vec<String> = (0..STUDENTS).step_by(50).map(name).collect();
    assert_eq!(row_names(&html), stuck);
    assert!(html.contains("6 of 300 students match"));

    // Class figures: pass rate and median best score on the first quiz.
    let passed = (0..STUDENTS).filter(|i| i % 11 >= 8).count();
    let rate = ((passed * 2000 + STUDENTS) / (2 * STUDENTS)) as f64 / 10.0;
    let mut scores: Vec<usize> = (0..STUDENTS).map(|i| (i % 11) * 10).collect();
    scores.sort_unstable();
    let median = (scores[149] + scores[150]) as f64 / 2.0;
    let figure = format!("{rate}% pass · median {median}%");
    assert!(html.contains(&figure), "{figure}");
    assert!(
        html.contains("0% pass · median 0% · ⚑6"),
        "the second quiz: six stuck"
    );

    // Bad parameters are a clear 400.
    for query in ["sort=bogus", "page=0", "dir=sideways", "show=some"] {
        let response = instructor_get(&app, &format!("/instructor?{query}")).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
    }
    let body = instructor_get(&app, "/instructor?sort=bogus")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        body.contains(&quizzes[0]),
        "the message lists what may be sorted by"
    );
}

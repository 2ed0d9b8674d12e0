//! The instructor gradebook: refused when switched off, refused without the right
//! token, correct counts over several students, and CSV that parses (with its header
//! row even before anyone has attempted anything).

use reqwest::StatusCode;

use crate::support::client::{instructor, instructor_csv, set_name, text};
use crate::support::quiz::json_answers;
use crate::support::{spawn, student};

const TOKEN: &str = "correct-horse-battery-staple-and-more";

async fn spawn_with_token() -> crate::support::TestApp {
    crate::support::spawn_with_token(TOKEN).await
}

#[tokio::test]
async fn the_gradebook_is_refused_when_no_token_is_configured() {
    let app = spawn().await;
    for path in ["/instructor", "/instructor/grades.csv"] {
        let response = reqwest::Client::new()
            .get(format!("{}{path}", app.base))
            .bearer_auth("anything")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{path}");
        assert!(
            response
                .text()
                .await
                .unwrap()
                .contains("GPULAB_INSTRUCTOR_TOKEN")
        );
    }
}

#[tokio::test]
async fn the_gradebook_needs_the_right_token() {
    let app = spawn_with_token().await;
    let client = reqwest::Client::new();
    let form = client
        .get(format!("{}/instructor", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), StatusCode::OK);
    let html = form.text().await.unwrap();
    assert!(html.contains("name=\"token\"") && !html.contains("Class gradebook"));
    let csv = client
        .get(format!("{}/instructor/grades.csv", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(csv.status(), StatusCode::UNAUTHORIZED);
    let wrong = client
        .get(format!("{}/instructor/grades.csv", app.base))
        .bearer_auth("correct-horse")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let (_, login) = instructor(&app, "nope").await;
    assert_eq!(login.status(), StatusCode::UNAUTHORIZED);
    assert!(login.text().await.unwrap().contains("not right"));
}

#[tokio::test]
async fn the_gradebook_counts_several_students_and_exports_csv() {
    let app = spawn_with_token().await;
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    let n = quiz.questions.len();
    let url = format!("{}/api/quizzes/why-gpus/attempts", app.base);
    // Ada passes on her second try; Bo tries once and fails; Cy never takes the quiz.
    for (name, scores) in [("Ada <b>", vec![2, n]), ("Bo", vec![1]), ("Cy", vec![])] {
        let client = student();
        set_name(&app, &client, name).await;
        for right in scores {
            assert!(
                client
                    .post(&url)
                    .json(&json_answers(&quiz, right))
                    .send()
                    .await
                    .unwrap()
                    .status()
                    .is_success()
            );
        }
    }

    let (instructor, login) = instructor(&app, TOKEN).await;
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    let cookie = login.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && !cookie.contains(TOKEN),
        "the cookie holds a session id, not the token"
    );
    let page = text(&instructor, &format!("{}/instructor", app.base)).await;
    assert!(page.contains("Class gradebook"));
    assert!(
        page.contains("Ada &#60;b&#62;") && !page.contains("Ada <b>"),
        "names are escaped"
    );
    assert!(
        page.contains(
            "<td class=\"passed\">100% <span aria-hidden=\"true\">✓</span><span class=\"visually-hidden\">passed</span> <span aria-hidden=\"true\">×2</span>"
        ),
        "score, pass and attempts on one line"
    );
    assert!(page.contains("Students with at least one attempt: 2."));

    let csv_text = instructor_csv(&app, TOKEN, "grades.csv").await;
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2, "{csv_text}");
    let ada = rows
        .iter()
        .find(|r| &r[col("display_name")] == "Ada <b>")
        .unwrap();
    assert_eq!(&ada[col("attempts")], "2");
    assert_eq!(&ada[col("passed")], "true");
    assert_eq!(&ada[col("best_percent")], "100.0");
    let bo = rows
        .iter()
        .find(|r| &r[col("display_name")] == "Bo")
        .unwrap();
    assert_eq!(&bo[col("attempts")], "1");
    assert_eq!(&bo[col("passed")], "false");

    let missed = text(&instructor, &format!("{}/instructor/missed.csv", app.base)).await;
    let mut reader = csv::Reader::from_reader(missed.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    // The last question was answered by two students (Ada twice, Bo once), missed by
    // both (counted once each), and only Ada's second attempt got it right.
    let last = &quiz.questions[n - 1].id;
    let row = records
        .iter()
        .find(|r| &r[col("question_id")] == last.as_str())
        .expect("last question is among the missed");
    let counts = (
        &row[col("students_missed")],
        &row[col("students_answered")],
        &row[col("students_never_right")],
    );
    assert_eq!(counts, ("2", "2", "1"), "{missed}");
}

#[tokio::test]
async fn a_class_with_no_attempts_gets_each_csv_with_its_header_row() {
    let app = spawn_with_token().await;
    for (name, columns) in [
        (
            "grades.csv",
            &["student", "quiz_id", "best_percent", "last_attempt_at"][..],
        ),
        (
            "missed.csv",
            &["quiz_id", "question", "students_missed"][..],
        ),
        (
            "predictions.csv",
            &["student", "experiment", "predicted", "measured"][..],
        ),
    ] {
        let csv_text = instructor_csv(&app, TOKEN, name).await;
        assert_eq!(
            csv_text.lines().count(),
            1,
            "{name}: the header alone: {csv_text:?}"
        );
        let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
        let headers = reader.headers().unwrap().clone();
        for column in columns {
            assert!(
                headers.iter().any(|h| h == *column),
                "{name}: {column} in {headers:?}"
            );
        }
        assert_eq!(reader.records().count(), 0, "{name}");
    }
}

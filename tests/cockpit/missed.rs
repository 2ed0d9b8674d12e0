//! Most-missed questions: counted per student (not per attempt), in course order, with
//! the question's text and the section that teaches it, on the page and in missed.csv.

use super::{TOKEN, attempt, instructor_get};
use crate::support::{spawn_with_token, student};

#[tokio::test]
async fn missed_questions_count_students_in_course_order_with_text_and_section() {
    let app = spawn_with_token(TOKEN).await;
    let course = &app.state.course;
    let (first, second) = (course.quizzes[0].clone(), course.quizzes[1].clone());
    let n = first.questions.len();
    // Ada misses everything of the second quiz, then all of the first quiz twice; Bo
    // misses only the first quiz's last question, once.
    let (ada, bo) = (student(), student());
    attempt(&app, &ada, &second.id, 0).await;
    attempt(&app, &ada, &first.id, 0).await;
    attempt(&app, &ada, &first.id, 0).await;
    attempt(&app, &bo, &first.id, n - 1).await;

    let csv_text = instructor_get(&app, "/instructor/missed.csv")
        .await
        .text()
        .await
        .unwrap();
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), n + second.questions.len(), "{csv_text}");
    let order: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r[col("quiz_id")].to_string(),
                r[col("question_id")].to_string(),
            )
        })
        .collect();
    let course_order: Vec<(String, String)> = [&first, &second]
        .iter()
        .flat_map(|q| {
            q.questions
                .iter()
                .map(|question| (q.id.clone(), question.id.clone()))
        })
        .collect();
    assert_eq!(
        order, course_order,
        "course order, whatever order they were missed in"
    );

    let last = &rows[n - 1];
    assert_eq!(
        &last[col("students_missed")],
        "2",
        "Ada's two misses count once"
    );
    assert_eq!(&last[col("students_answered")], "2");
    assert_eq!(&last[col("students_never_right")], "2");
    let top = &rows[0];
    assert_eq!(
        (
            &top[col("students_missed")],
            &top[col("students_never_right")]
        ),
        ("1", "1")
    );
    let question = &first.questions[0];
    assert_eq!(&top[col("question")], question.prompt.as_str());
    assert_eq!(&top[col("question_number")], "1");
    let teaches = question
        .teaches
        .as_ref()
        .expect("the course links each question to a section");
    assert_eq!(&top[col("section")], teaches.href.as_str());
    assert!(top[col("last_missed_at")].starts_with("20"), "a timestamp");

    let html = instructor_get(&app, "/instructor")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains(&format!(
            "<a href=\"{}\">",
            teaches.href.replace('#', "&#35;")
        )) || html.contains(&format!("<a href=\"{}\">", teaches.href)),
        "the page links the section"
    );
    assert!(html.contains("2 of 2"));

    let grades = instructor_get(&app, "/instructor/grades.csv")
        .await
        .text()
        .await
        .unwrap();
    let mut reader = csv::Reader::from_reader(grades.as_bytes());
    let headers = reader.headers().unwrap().clone();
    assert!(
        headers.iter().any(|h| h == "first_attempt_at")
            && headers.iter().any(|h| h == "last_attempt_at")
    );
    let record = reader.records().next().unwrap().unwrap();
    let at = headers.iter().position(|h| h == "last_attempt_at").unwrap();
    assert!(record[at].ends_with('Z'), "{grades}");
}

//! A learner's identity across browsers (resume codes, slowed down when guessed) and in
//! the instructor's hands (rename, merge with every attempt kept).

use reqwest::StatusCode;

use super::{TOKEN, attempt, instructor_get, pseudonym_of};
use crate::support::client::{instructor, post_form, set_cookie, set_name, text};
use crate::support::quiz::progress;
use crate::support::{new_browser, spawn_with_token, student};

fn shown_code(home: &str) -> String {
    let start = home
        .find("class=\"resume-code\">")
        .expect("the home page shows the code")
        + 20;
    home[start..start + 14].to_string()
}

#[tokio::test]
async fn a_resume_code_carries_progress_to_another_browser() {
    let app = spawn_with_token(TOKEN).await;
    let quiz = app.state.course.quizzes[0].clone();
    let (phone, laptop) = (student(), student());
    set_name(&app, &phone, "Ada").await;
    attempt(&app, &phone, &quiz.id, quiz.questions.len()).await;
    let home = text(&phone, &format!("{}/", app.base)).await;
    assert!(
        !home.contains("class=\"resume-code\""),
        "no code until asked for"
    );
    let made = post_form(&phone, &format!("{}/me/resume-code", app.base), &[]).await;
    assert_eq!(made.status(), StatusCode::SEE_OTHER);
    let code = shown_code(&text(&phone, &format!("{}/", app.base)).await);
    assert_eq!(
        code,
        shown_code(&text(&phone, &format!("{}/", app.base)).await),
        "stable"
    );
    assert!(
        code.len() == 14 && code.chars().filter(|c| *c == '-').count() == 2,
        "{code}"
    );

    let url = format!("{}/me/resume", app.base);
    let typed = format!(" {} ", code.to_lowercase().replace('-', " "));
    let resumed = post_form(&laptop, &url, &[("code", typed.as_str())]).await;
    assert_eq!(resumed.status(), StatusCode::SEE_OTHER);
    assert!(set_cookie(&resumed).starts_with("gpulab_student="));
    let carried = progress(&app, &laptop).await;
    assert_eq!(carried["display_name"], "Ada");
    assert_eq!(carried["progress"][0]["passed"], true, "{carried}");

    // Without the page's cookie, a resume is refused like every other write.
    let bare = post_form(&new_browser(), &url, &[("code", code.as_str())]).await;
    assert_eq!(bare.status(), StatusCode::FORBIDDEN);
    // Malformed codes are explained; wrong ones are slowed down.
    let malformed = post_form(&laptop, &url, &[("code", "abc")]).await;
    assert_eq!(malformed.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(malformed.text().await.unwrap().contains("12 letters"));
    // The first five wrong codes are judged; then the address waits, 1 s after the fifth
    // and twice as long after each further one. On a loaded box a guess can land after a
    // pause ended: it is judged and doubles the next pause, so two refusals in a row come
    // within a few more guesses.
    let guesser = student();
    let mut statuses = Vec::new();
    for i in 0..10 {
        let guess = format!("0000-0000-{i:04}");
        statuses.push(
            post_form(&guesser, &url, &[("code", guess.as_str())])
                .await
                .status(),
        );
        if statuses.ends_with(&[StatusCode::TOO_MANY_REQUESTS; 2]) {
            break;
        }
    }
    assert!(
        statuses[..5]
            .iter()
            .all(|s| *s == StatusCode::UNPROCESSABLE_ENTITY),
        "{statuses:?}"
    );
    assert!(
        statuses.ends_with(&[StatusCode::TOO_MANY_REQUESTS; 2]),
        "no pause after five wrong codes: {statuses:?}"
    );
    // The same address (a class's NAT address): the right code is taken at once.
    let own = post_form(&guesser, &url, &[("code", code.as_str())]).await;
    assert_eq!(
        own.status(),
        StatusCode::SEE_OTHER,
        "a right code never waits"
    );
}

#[tokio::test]
async fn the_instructor_renames_and_merges_students_keeping_every_attempt() {
    let app = spawn_with_token(TOKEN).await;
    let quiz = app.state.course.quizzes[0].clone();
    let (bo, bo_elsewhere) = (student(), student());
    set_name(&app, &bo, "Bo").await;
    attempt(&app, &bo, &quiz.id, 1).await;
    attempt(&app, &bo_elsewhere, &quiz.id, quiz.questions.len()).await;
    let (teacher, login) = instructor(&app, TOKEN).await;
    assert_eq!(login.status(), StatusCode::SEE_OTHER);
    let page = text(&teacher, &format!("{}/instructor", app.base)).await;
    let bo_key = pseudonym_of(&page, "Bo");
    let other = page
        .find("<th scope=\"row\">anonymous s-")
        .expect("the unnamed student")
        + 26;
    let other_key = page[other..other + 18].to_string();

    let merge = format!("{}/instructor/students/merge", app.base);
    let same = post_form(
        &teacher,
        &merge,
        &[("from", bo_key.as_str()), ("into", bo_key.as_str())],
    )
    .await;
    assert_eq!(same.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let unknown = post_form(
        &teacher,
        &merge,
        &[("from", "s-0000000000000000"), ("into", bo_key.as_str())],
    )
    .await;
    assert_eq!(unknown.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let extra = post_form(
        &teacher,
        &merge,
        &[
            ("from", other_key.as_str()),
            ("into", bo_key.as_str()),
            ("x", "1"),
        ],
    )
    .await;
    assert_eq!(extra.status(), StatusCode::BAD_REQUEST);
    let merged = post_form(
        &teacher,
        &merge,
        &[("from", other_key.as_str()), ("into", bo_key.as_str())],
    )
    .await;
    assert_eq!(merged.status(), StatusCode::SEE_OTHER);

    let rename = format!("{}/instructor/students/rename", app.base);
    let long = "x".repeat(61);
    let too_long = post_form(
        &teacher,
        &rename,
        &[
            ("student", bo_key.as_str()),
            ("display_name", long.as_str()),
        ],
    )
    .await;
    assert_eq!(too_long.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let renamed = post_form(
        &teacher,
        &rename,
        &[("student", bo_key.as_str()), ("display_name", "Bo Li")],
    )
    .await;
    assert_eq!(renamed.status(), StatusCode::SEE_OTHER);

    let page = text(&teacher, &format!("{}/instructor?saved=merged", app.base)).await;
    assert!(
        page.contains("Students with at least one attempt: 1."),
        "two became one"
    );
    assert_eq!(pseudonym_of(&page, "Bo Li"), bo_key);
    assert!(
        page.contains("100%") && page.contains("×2"),
        "best score recomputed over both attempts"
    );
    let csv_text = instructor_get(&app, "/instructor/grades.csv")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        csv_text.contains("Bo Li") && csv_text.contains(",100.0,2,true,"),
        "{csv_text}"
    );
    // Bo's own browser sees the merged progress.
    assert_eq!(progress(&app, &bo).await["progress"][0]["passed"], true);
}

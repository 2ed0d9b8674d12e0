//! The instructor cockpit (issue 16, items 13–16) from the outside: every new instructor
//! route refuses without the token, the gradebook sorts, filters and pages a class of
//! 300 on the server, most-missed questions are counted per student in course order,
//! resume codes carry a learner to another browser, the instructor renames and merges
//! students, and the experiment history survives a restart.

mod access;
mod class_of_300;
mod history;
mod identity;
mod missed;
mod nat_guessing;

use crate::support::TestApp;
use crate::support::quiz::json_answers;

/// The instructor token these tests start the server with.
pub(crate) const TOKEN: &str = "cockpit-token-long-enough-to-be-accepted-0123";

/// `client` submits `right` correct answers to `quiz_id` (asserting it was stored).
pub(crate) async fn attempt(app: &TestApp, client: &reqwest::Client, quiz_id: &str, right: usize) {
    let quiz = app.state.course.quiz(quiz_id).unwrap().clone();
    let response = client
        .post(format!("{}/api/quizzes/{quiz_id}/attempts", app.base))
        .json(&json_answers(&quiz, right))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
}

/// The page at `path` as the instructor (bearer token).
pub(crate) async fn instructor_get(app: &TestApp, path: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{}{path}", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
}

/// The pseudonym shown under `name` in the gradebook page `html`.
pub(crate) fn pseudonym_of(html: &str, name: &str) -> String {
    let at = html
        .find(&format!(
            "<th scope=\"row\">{name} <span class=\"pseudonym\">"
        ))
        .unwrap_or_else(|| panic!("{name} is not in the gradebook"));
    let rest = &html[at..];
    let start = rest.find("s-").unwrap();
    rest[start..start + 18].to_string()
}

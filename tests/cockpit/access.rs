//! Every instructor route, old and new, refuses a request without the instructor's
//! session or token: 401 when the gradebook is on, 403 when it is switched off.

use reqwest::StatusCode;

use super::TOKEN;
use crate::support::{spawn, spawn_with_token, student};

const ROUTES: [(&str, &str); 5] = [
    ("GET", "/instructor/live.json"),
    ("GET", "/instructor/grades.csv"),
    ("GET", "/instructor/missed.csv"),
    ("POST", "/instructor/students/rename"),
    ("POST", "/instructor/students/merge"),
];

async fn send(
    client: &reqwest::Client,
    method: &str,
    url: String,
    bearer: Option<&str>,
) -> StatusCode {
    let request = match method {
        "GET" => client.get(url),
        _ => client
            .post(url)
            .form(&[("student", "s-0123456789abcdef"), ("display_name", "x")]),
    };
    let request = match bearer {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    request.send().await.unwrap().status()
}

#[tokio::test]
async fn cockpit_routes_refuse_students_and_wrong_tokens() {
    let app = spawn_with_token(TOKEN).await;
    let live = send(
        &reqwest::Client::new(),
        "GET",
        format!("{}/instructor/live.json", app.base),
        Some(TOKEN),
    )
    .await;
    assert_eq!(live, StatusCode::OK, "the right token opens them");
    let a_student = student();
    for (method, path) in ROUTES {
        let url = || format!("{}{path}", app.base);
        assert_eq!(
            send(&a_student, method, url(), None).await,
            StatusCode::UNAUTHORIZED,
            "{method} {path} as a student"
        );
        assert_eq!(
            send(
                &a_student,
                method,
                url(),
                Some("not-the-token-but-just-as-long-0123456")
            )
            .await,
            StatusCode::UNAUTHORIZED,
            "{method} {path} with a wrong token"
        );
    }
}

#[tokio::test]
async fn cockpit_routes_are_off_without_a_configured_token() {
    let app = spawn().await;
    for (method, path) in ROUTES {
        let status = send(
            &student(),
            method,
            format!("{}{path}", app.base),
            Some(TOKEN),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}");
    }
}

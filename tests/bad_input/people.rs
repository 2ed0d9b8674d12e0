//! People who should not get in, and names built to break what shows them: wrong
//! instructor credentials of every shape, the instructor routes with no token
//! configured, and display names that try to run as HTML or as spreadsheet formulas.

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::client::{instructor_csv, json, set_name};
use crate::support::hostile::{client, html_error};
use crate::support::quiz::json_answers;
use crate::support::quiz::submit;
use crate::support::{TestApp, escaped, spawn};

const TOKEN: &str = "a-long-instructor-token-for-bad-input-tests";

async fn spawn_with_token() -> TestApp {
    crate::support::spawn_with_token(TOKEN).await
}

/// A student with `name` and one quiz attempt; returns their id.
async fn student_named(app: &TestApp, name: &str) -> String {
    let student = crate::support::student();
    let saved = set_name(app, &student, name).await;
    assert_eq!(saved.status(), StatusCode::SEE_OTHER, "{name}");
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    let graded = submit(app, &student, "why-gpus", &json_answers(&quiz, 3)).await;
    assert_eq!(graded.status(), StatusCode::OK);
    let me: Value = json(&student, &format!("{}/api/me/progress", app.base)).await;
    me["student_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn instructor_routes_refuse_wrong_credentials_and_never_leak_data() {
    let app = spawn_with_token().await;
    let id = student_named(&app, "Ada Lovelace").await;
    let basic = format!("Basic {}", base64ish(&format!("instructor:{TOKEN}")));
    let short = &TOKEN[..TOKEN.len() - 1];
    let headers: Vec<(&str, String)> = vec![
        ("authorization", "Bearer".to_string()),
        ("authorization", "Bearer ".to_string()),
        ("authorization", "Bearer wrong".to_string()),
        ("authorization", format!("Bearer {TOKEN}x")),
        ("authorization", format!("Bearer {short}")),
        ("authorization", format!("Token {TOKEN}")),
        ("authorization", basic),
        ("authorization", format!("Bearer {}", "x".repeat(16 * 1024))),
        ("cookie", format!("gpulab_instructor={TOKEN}")),
        ("cookie", format!("gpulab_instructor={}", "0".repeat(32))),
        ("x-instructor-token", TOKEN.to_string()),
    ];
    for path in ["/instructor/grades.csv", "/instructor/missed.csv"] {
        let mut attempts: Vec<reqwest::RequestBuilder> = headers
            .iter()
            .map(|(k, v)| client().get(format!("{}{path}", app.base)).header(*k, v))
            .collect();
        attempts.push(client().get(format!("{}{path}", app.base)));
        attempts.push(client().get(format!("{}{path}?token={TOKEN}", app.base)));
        for (i, request) in attempts.into_iter().enumerate() {
            let response = request.send().await.unwrap();
            // 429 once the sign-in guard has seen a few wrong tokens from this address.
            let text = html_error(response, &[401, 403, 429], &format!("{path} #{i}")).await;
            assert!(
                !text.contains("Ada") && !text.contains(&id),
                "{path} #{i} leaked data"
            );
        }
    }
    // The gradebook page shows the sign-in form, not the class.
    for (k, v) in &headers {
        let response = client()
            .get(format!("{}/instructor", app.base))
            .header(*k, v)
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success() || response.status().is_client_error());
        let text = response.text().await.unwrap();
        assert!(
            !text.contains("Ada") && !text.contains(&id[..8]),
            "/instructor with {k} leaked data"
        );
    }
    // Sign-in attempts with odd tokens.
    for body in [
        "token=".to_string(),
        format!("token={short}"),
        format!("token={TOKEN}%00"),
        format!("token={}", "x".repeat(60_000)),
        format!("token={TOKEN}x&token={TOKEN}"),
        format!("{{\"token\": \"{TOKEN}\"}}"),
    ] {
        let response = client()
            .post(format!("{}/instructor/login", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert!(
            response.headers().get("set-cookie").is_none(),
            "{body:.40}: a session was issued"
        );
        // 429 once the sign-in guard has paused this address after earlier wrong tokens.
        html_error(response, &[400, 401, 429], &format!("login {body:.40}")).await;
    }
}

#[tokio::test]
async fn instructor_routes_are_off_without_a_token() {
    // grades.csv and /instructor are covered in gradebook.rs.
    let app = spawn().await;
    for (method, path) in [
        ("GET", "/instructor/missed.csv"),
        ("POST", "/instructor/login"),
    ] {
        let response = client()
            .request(method.parse().unwrap(), format!("{}{path}", app.base))
            .bearer_auth("anything")
            .header("content-type", "application/x-www-form-urlencoded")
            .body("token=anything")
            .send()
            .await
            .unwrap();
        html_error(response, &[403], path).await;
    }
}

/// Standard base64, enough for a Basic header.
fn base64ish(text: &str) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in text.as_bytes().chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

/// Names built to break out of HTML or to run as a spreadsheet formula.
const HOSTILE_NAMES: &[&str] = &[
    "<script>alert(1)</script>",
    "\"><img src=x onerror=alert(1)>",
    "</td></tr><tr><td>forged row",
    "=HYPERLINK(\"http://example.invalid\",\"grades\")",
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A2)",
];

#[tokio::test]
async fn hostile_display_names_are_escaped_in_the_gradebook() {
    let app = spawn_with_token().await;
    for name in HOSTILE_NAMES {
        student_named(&app, name).await;
    }
    let page = client()
        .get(format!("{}/instructor", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    for name in HOSTILE_NAMES {
        assert!(html.contains(&escaped(name)), "{name} is shown, escaped");
    }
    for raw_markup in ["<script>alert", "<img src=x", "<tr><td>forged"] {
        assert!(
            !html.contains(raw_markup),
            "{raw_markup} reached the page unescaped"
        );
    }
}

#[tokio::test]
async fn hostile_display_names_cannot_run_as_formulas_in_the_csv() {
    // A cell starting with = + - @ is a formula to Excel and LibreOffice (CSV injection):
    // the instructor opens grades.csv, and a student's name runs. OWASP's fix: prefix
    // such cells with a single quote.
    let app = spawn_with_token().await;
    for name in HOSTILE_NAMES {
        student_named(&app, name).await;
    }
    let csv = instructor_csv(&app, TOKEN, "grades.csv").await;
    for line in csv.lines().skip(1) {
        for cell in split_csv(line) {
            let first = cell.chars().next().unwrap_or(' ');
            assert!(
                !(matches!(first, '=' | '+' | '@') || first == '-' && cell.parse::<f64>().is_err()),
                "formula cell {cell:?} in {line}"
            );
        }
    }
}

/// The cells of one CSV line (quotes removed, doubled quotes undone).
fn split_csv(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(String::new()),
            (c, _) => cells.last_mut().unwrap().push(c),
        }
    }
    cells
}

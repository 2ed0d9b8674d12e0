//! Hand-written hostile input, on top of what quiz.rs, experiments.rs and gradebook.rs
//! already check: malformed JSON and extreme numbers on every JSON endpoint, oversized and
//! mislabelled bodies, forged and huge cookies, path traversal on /static and very long
//! URLs sent byte for byte (reqwest would normalise them), odd job ids, wrong instructor
//! credentials, and display names built to break HTML and spreadsheets. The rule in each:
//! a 4xx that says what was wrong (JSON on /api, a page elsewhere), never a 5xx, never
//! data that should not be shown.

use std::io::{Read, Write};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::quiz::json_answers;
use crate::support::{TestApp, escaped, spawn, spawn_with, test_config};

/// Every endpoint that reads a JSON body, with a valid body in which `@` marks one value.
const JSON_ENDPOINTS: &[(&str, &str)] = &[
    ("/api/experiments/transfer", r#"{"max_bytes": @}"#),
    ("/api/experiments/matmul", r#"{"max_size": @}"#),
    ("/api/experiments/precision", r#"{"size": @}"#),
    (
        "/api/experiments/training",
        r#"{"batch": @, "hidden": 8, "steps": 10, "log_every": 1}"#,
    ),
    (
        "/api/experiments/training",
        r#"{"batch": 8, "hidden": 8, "steps": @, "log_every": 1}"#,
    ),
    ("/api/experiments/break-it", r#"{"case": @}"#),
    ("/api/playground/tensors", r#"{"name": "w", "mib": @}"#),
];

/// Values no field above accepts: out of range, the wrong type, or not JSON at all.
const BAD_VALUES: &[&str] = &[
    "18446744073709551616",
    "-1",
    "-9223372036854775809",
    "1e308",
    "1e400",
    "-0",
    "\"NaN\"",
    "\"Infinity\"",
    "\"1024\"",
    "NaN",
    "Infinity",
    "true",
    "null",
    "[]",
    "{}",
    "[1024]",
];

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Asserts a JSON error body `{"error": {"status", "message"}}` with one of `statuses`.
async fn json_error(response: reqwest::Response, statuses: &[u16], context: &str) -> String {
    let status = response.status().as_u16();
    let kind = content_type(&response);
    let text = response.text().await.unwrap();
    assert!(statuses.contains(&status), "{context}: {status} {text}");
    assert!(
        kind.starts_with("application/json"),
        "{context}: {status} is {kind}: {text}"
    );
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["status"], status, "{context}: {text}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "{context}: no message in {text}");
    message.to_string()
}

/// Asserts an HTML error page with one of `statuses`.
async fn html_error(response: reqwest::Response, statuses: &[u16], context: &str) -> String {
    let status = response.status().as_u16();
    let kind = content_type(&response);
    let text = response.text().await.unwrap();
    assert!(statuses.contains(&status), "{context}: {status} {text}");
    assert!(
        kind.starts_with("text/html"),
        "{context}: {status} is {kind}: {text}"
    );
    assert!(text.contains("<h1"), "{context}: not an error page: {text}");
    text
}

fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// The answer to a request sent byte for byte (no URL normalisation, any header bytes).
struct Raw {
    status: u16,
    head: String,
    body: Vec<u8>,
}

/// Sends `request` as-is on a fresh connection and reads until the server closes it.
/// Status 0: the server closed the connection without answering.
async fn raw(app: &TestApp, request: Vec<u8>) -> Raw {
    let addr = app.base.trim_start_matches("http://").to_string();
    tokio::task::spawn_blocking(move || {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        // The server may answer and close before reading everything (a huge URL).
        let _ = stream.write_all(&request);
        let mut data = Vec::new();
        let _ = stream.read_to_end(&mut data);
        let split = data
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or(data.len());
        let head = String::from_utf8_lossy(&data[..split]).to_string();
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = data.get(split + 4..).unwrap_or_default().to_vec();
        Raw { status, head, body }
    })
    .await
    .unwrap()
}

fn get_request(target: &[u8], extra_headers: &[u8]) -> Vec<u8> {
    [
        b"GET ".as_slice(),
        target,
        b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n",
        extra_headers,
        b"\r\n",
    ]
    .concat()
}

#[tokio::test]
async fn malformed_json_is_a_400_with_a_json_message_on_every_json_endpoint() {
    let app = spawn().await;
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let bodies: Vec<Vec<u8>> = vec![
        b"{".to_vec(),
        b"{\"max_bytes\":}".to_vec(),
        b"{} trailing".to_vec(),
        b"null".to_vec(),
        b"\"text\"".to_vec(),
        b"42".to_vec(),
        deep.into_bytes(),
        vec![0xff, 0xfe, 0x7b, 0x7d],
    ];
    let mut endpoints: Vec<&str> = JSON_ENDPOINTS.iter().map(|(p, _)| *p).collect();
    endpoints.extend(["/api/experiments/timing", "/api/quizzes/why-gpus/attempts"]);
    endpoints.dedup();
    for path in endpoints {
        for body in &bodies {
            let response = client()
                .post(format!("{}{path}", app.base))
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let context = format!(
                "{path} {}",
                String::from_utf8_lossy(&body[..body.len().min(20)])
            );
            json_error(response, &[400], &context).await;
        }
    }
}

#[tokio::test]
async fn wrong_types_and_extreme_numbers_get_a_4xx_never_a_5xx() {
    let app = spawn().await;
    for (path, template) in JSON_ENDPOINTS {
        for value in BAD_VALUES {
            let body = template.replace('@', value);
            let response = client()
                .post(format!("{}{path}", app.base))
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            json_error(response, &[400, 422], &format!("{path} {body}")).await;
        }
    }
    // Tensor names: the wrong type, or strings the playground refuses.
    let long = format!("\"{}\"", "a".repeat(33));
    for value in [
        "1",
        "null",
        "[]",
        "{}",
        "true",
        "\"\"",
        "\"../x\"",
        "\"a b\"",
        "\"\\u0000\"",
        "\"\u{fc}\"",
        long.as_str(),
    ] {
        let body = format!(r#"{{"name": {value}, "mib": 1}}"#);
        let response = client()
            .post(format!("{}/api/playground/tensors", app.base))
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        json_error(response, &[400, 422], &body).await;
    }
    // Quiz answers: a single-choice question given each bad value, and a numeric one
    // given numbers JSON cannot hold.
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    let single = quiz
        .questions
        .iter()
        .find(|q| q.kind_name() == "single")
        .unwrap()
        .id
        .clone();
    let numeric = quiz
        .questions
        .iter()
        .find(|q| q.kind_name() == "numeric")
        .map(|q| q.id.clone());
    let url = format!("{}/api/quizzes/why-gpus/attempts", app.base);
    let mut cases: Vec<(String, &str)> = BAD_VALUES
        .iter()
        .chain(&["18446744073709551615", "1.5", "100000"])
        .map(|v| (single.clone(), *v))
        .collect();
    if let Some(id) = numeric {
        cases.extend(["1e400", "\"NaN\"", "\"1e3\"", "[1]", "null"].map(|v| (id.clone(), v)));
    }
    for (question, value) in cases {
        let mut answers = json_answers(&quiz, 0);
        answers["answers"][&question] = Value::from("@@");
        let body = answers.to_string().replace("\"@@\"", value);
        let response = client()
            .post(&url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        json_error(response, &[400, 422], &format!("{question} = {value}")).await;
    }
}

#[tokio::test]
async fn unknown_fields_are_refused_on_every_json_endpoint() {
    // transfer, timing and quiz attempts are covered in experiments.rs and quiz.rs.
    let app = spawn().await;
    for (path, body) in [
        (
            "/api/experiments/matmul",
            r#"{"max_size": 64, "priority": 1}"#,
        ),
        (
            "/api/experiments/precision",
            r#"{"size": 64, "dtype": "fp8"}"#,
        ),
        (
            "/api/experiments/training",
            r#"{"batch": 8, "hidden": 8, "steps": 10, "log_every": 1, "gpu": 1}"#,
        ),
        (
            "/api/experiments/break-it",
            r#"{"case": "log-every-step", "x": 1}"#,
        ),
        (
            "/api/playground/tensors",
            r#"{"name": "w", "mib": 1, "device": "cuda:1"}"#,
        ),
    ] {
        let response = client()
            .post(format!("{}{path}", app.base))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let message = json_error(response, &[400], path).await;
        assert!(message.contains("unknown field"), "{path}: {message}");
    }
}

#[tokio::test]
async fn oversized_bodies_get_413_with_a_json_or_html_message() {
    let app = spawn().await;
    let api = [
        "/api/experiments/transfer",
        "/api/experiments/matmul",
        "/api/experiments/timing",
        "/api/experiments/training",
        "/api/experiments/precision",
        "/api/experiments/break-it",
        "/api/playground/tensors",
        "/api/quizzes/why-gpus/attempts",
    ];
    let pages = [
        "/lessons/why-gpus/quiz",
        "/final-exam",
        "/me/name",
        "/me/reset",
        "/instructor/login",
    ];
    for size in [64 * 1024 + 1, 1 << 20] {
        let body = vec![b' '; size];
        for path in api {
            let response = client()
                .post(format!("{}{path}", app.base))
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            json_error(response, &[413], &format!("{path} {size} B")).await;
        }
        for path in pages {
            let response = client()
                .post(format!("{}{path}", app.base))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            html_error(response, &[413], &format!("{path} {size} B")).await;
        }
    }
}

#[tokio::test]
async fn a_body_that_never_arrives_is_answered_within_the_request_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path().join("gpulab.db"));
    config.limits.request_timeout_secs = 2;
    let app = spawn_with(config).await;
    // Declares 10 MB and sends two bytes: the server must not wait for ever.
    let started = std::time::Instant::now();
    let answer = raw(
        &app,
        b"POST /api/experiments/timing HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\nConnection: close\r\n\r\n{}".to_vec(),
    )
    .await;
    assert!(
        [408, 413].contains(&answer.status),
        "answered {}: {}",
        answer.status,
        answer.head
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn mislabelled_bodies_are_refused_or_read_as_what_they_are() {
    let app = spawn().await;
    let url = format!("{}/api/experiments/matmul", app.base);
    let utf16: Vec<u8> = r#"{"max_size": 64}"#.encode_utf16().flat_map(u16::to_le_bytes).collect();
    for (kind, body) in [
        ("application/x-www-form-urlencoded", b"max_size=64".to_vec()),
        (
            "multipart/form-data; boundary=X",
            b"--X\r\nContent-Disposition: form-data; name=\"max_size\"\r\n\r\n64\r\n--X--\r\n"
                .to_vec(),
        ),
        ("application/json; charset=utf-16", utf16),
        ("application/xml", b"<max_size>64</max_size>".to_vec()),
    ] {
        let response = client()
            .post(&url)
            .header("content-type", kind)
            .body(body)
            .send()
            .await
            .unwrap();
        json_error(response, &[400, 415], kind).await;
    }
    // JSON under another label: the document allows a 415; reading it as JSON is also
    // acceptable. Either way, never a 5xx.
    for kind in [Some("text/plain"), None] {
        let mut request = client().post(&url).body(r#"{"max_size": 64}"#);
        if let Some(kind) = kind {
            request = request.header("content-type", kind);
        }
        let status = request.send().await.unwrap().status().as_u16();
        assert!([202, 415, 429].contains(&status), "{kind:?}: {status}");
    }
    // Form routes given JSON.
    let response = client()
        .post(format!("{}/me/name", app.base))
        .header("content-type", "application/json")
        .body(r#"{"display_name": "Ada"}"#)
        .send()
        .await
        .unwrap();
    html_error(response, &[400, 415, 422], "/me/name with JSON").await;
}

#[tokio::test]
async fn forged_malformed_and_huge_cookies_never_become_an_identity() {
    let app = spawn().await;
    let url = format!("{}/api/me/progress", app.base);
    let forged = [
        String::new(),
        "ABCDEF0123456789ABCDEF0123456789".to_string(),
        "0123456789abcdef0123456789abcde".to_string(),
        "0123456789abcdef0123456789abcdef0".to_string(),
        "g".repeat(32),
        "' OR 1=1 --".to_string(),
        "a".repeat(8 * 1024),
    ];
    for value in &forged {
        let response = client()
            .get(&url)
            .header("cookie", format!("gpulab_student={value}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{value:.40}");
        let set = response.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .to_string();
        let body: Value = response.json().await.unwrap();
        let id = body["student_id"].as_str().unwrap();
        assert!(
            id.len() == 32
                && id
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{value:.40}: {id}"
        );
        assert_ne!(id, value.as_str());
        assert!(set.starts_with(&format!("gpulab_student={id}")), "{set}");
    }
    // Bytes a browser would never send, and a cookie header past any sane size.
    for header in [
        b"Cookie: gpulab_student=\xff\xfe\x00\x01\r\n".to_vec(),
        [
            b"Cookie: gpulab_student=".as_slice(),
            &[b'a'; 200_000],
            b"\r\n",
        ]
        .concat(),
        [b"Cookie: ".as_slice(), &b"x=1; ".repeat(20_000), b"\r\n"].concat(),
    ] {
        let answer = raw(&app, get_request(b"/api/me/progress", &header)).await;
        assert!(
            (200..500).contains(&answer.status) || answer.status == 0,
            "{}",
            answer.head
        );
    }
}

#[tokio::test]
async fn static_paths_never_reach_outside_the_embedded_files() {
    let app = spawn().await;
    for target in [
        b"/static/../Cargo.toml".as_slice(),
        b"/static/../../../../etc/passwd",
        b"/static/%2e%2e/Cargo.toml",
        b"/static/%2e%2e%2fCargo.toml",
        b"/static/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
        b"/static/%252e%252e%252fCargo.toml",
        b"/static/..%5c..%5cCargo.toml",
        b"/static/..\\..\\Cargo.toml",
        b"/static//etc/passwd",
        b"/static/%2fetc%2fpasswd",
        b"/static/css/site.css%00.png",
        b"/static/css/site.css/..",
        b"/static/.%2e/server/main.rs",
        b"/static/",
        b"/static/%c0%ae%c0%ae/Cargo.toml",
        b"/static/%ff%fe",
    ] {
        let answer = raw(&app, get_request(target, b"")).await;
        let shown = String::from_utf8_lossy(target);
        assert!(
            [400, 404].contains(&answer.status),
            "{shown}: {}",
            answer.head
        );
        let body = String::from_utf8_lossy(&answer.body);
        for secret in ["[package]", "root:x:", "fn main", "[dependencies]"] {
            assert!(!body.contains(secret), "{shown} served {secret}");
        }
        if answer.status == 404 {
            assert!(body.contains("Page not found"), "{shown}: {body}");
        }
    }
}

#[tokio::test]
async fn long_urls_and_reflected_paths_are_refused_or_escaped() {
    let app = spawn().await;
    // A long unknown path is a 404 page; past the server's limits, 414 or 431.
    for (len, statuses) in [
        (10_000, &[404][..]),
        (70_000, &[404, 414, 431][..]),
        (1_000_000, &[400, 414, 431][..]),
    ] {
        let target = format!("/{}", "a".repeat(len));
        let answer = raw(&app, get_request(target.as_bytes(), b"")).await;
        assert!(
            statuses.contains(&answer.status) || (len > 100_000 && answer.status == 0),
            "{len}: {}",
            answer.head
        );
    }
    // Paths that end up in pages are escaped there.
    for path in [
        "/lessons/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "/lessons/%3Cscript%3Ealert(1)%3C%2Fscript%3E/quiz",
        "/lessons/%22%3E%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E",
    ] {
        let response = client()
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        let html = html_error(response, &[404], path).await;
        assert!(!html.contains("<script>alert"), "{path}");
        assert!(!html.contains("<img src=x"), "{path}");
    }
    // Long ids and query strings on the API.
    let long_id = "9".repeat(5_000);
    let response = client()
        .get(format!("{}/api/jobs/{long_id}", app.base))
        .send()
        .await
        .unwrap();
    json_error(response, &[400], "a 5,000-digit job id").await;
    let response = client()
        .get(format!("{}/api/quizzes/{}", app.base, "q".repeat(5_000)))
        .send()
        .await
        .unwrap();
    json_error(response, &[404], "a 5,000-letter quiz id").await;
    let response = client()
        .get(format!("{}/api/device?{}", app.base, "x=1&".repeat(10_000)))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "a long query string is ignored"
    );
}

#[tokio::test]
async fn odd_job_ids_get_a_json_4xx() {
    let app = spawn().await;
    for (id, statuses) in [
        ("0", &[404][..]),
        ("18446744073709551615", &[404]),
        ("18446744073709551616", &[400]),
        ("-1", &[400]),
        ("1.0", &[400]),
        ("1e3", &[400]),
        ("0x10", &[400]),
        ("%20", &[400]),
        ("%2B1", &[400, 404]),
        ("%E2%91%A0", &[400]),
        ("null", &[400]),
    ] {
        let response = client()
            .get(format!("{}/api/jobs/{id}", app.base))
            .send()
            .await
            .unwrap();
        json_error(response, statuses, &format!("/api/jobs/{id}")).await;
    }
}

#[tokio::test]
async fn api_path_parameters_that_are_not_utf8_get_a_json_error() {
    let app = spawn().await;
    for target in [
        "/api/jobs/%ff",
        "/api/quizzes/%ff%fe",
        "/api/quizzes/%c3%28/attempts",
    ] {
        let method = if target.ends_with("attempts") {
            "POST"
        } else {
            "GET"
        };
        let response = client()
            .request(method.parse().unwrap(), format!("{}{target}", app.base))
            .header("content-type", "application/json")
            .body(r#"{"answers": {}}"#)
            .send()
            .await
            .unwrap();
        json_error(response, &[400, 404], target).await;
    }
}

const TOKEN: &str = "a-long-instructor-token-for-bad-input-tests";

async fn spawn_with_token() -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path().join("gpulab.db"));
    config.instructor_token = Some(TOKEN.to_string());
    (spawn_with(config).await, dir)
}

/// A student with `name` and one quiz attempt; returns their id.
async fn student_named(app: &TestApp, name: &str) -> String {
    let student = crate::support::student();
    let saved = student
        .post(format!("{}/me/name", app.base))
        .form(&[("display_name", name)])
        .send()
        .await
        .unwrap();
    assert_eq!(saved.status(), StatusCode::SEE_OTHER, "{name}");
    let quiz = app.state.course.quiz("why-gpus").unwrap().clone();
    let graded = student
        .post(format!("{}/api/quizzes/why-gpus/attempts", app.base))
        .json(&json_answers(&quiz, 3))
        .send()
        .await
        .unwrap();
    assert_eq!(graded.status(), StatusCode::OK);
    let me: Value = student
        .get(format!("{}/api/me/progress", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    me["student_id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn instructor_routes_refuse_wrong_credentials_and_never_leak_data() {
    let (app, _dir) = spawn_with_token().await;
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
            let text = html_error(response, &[401, 403], &format!("{path} #{i}")).await;
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
        html_error(response, &[400, 401], &format!("login {body:.40}")).await;
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
    let (app, _dir) = spawn_with_token().await;
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
    let (app, _dir) = spawn_with_token().await;
    for name in HOSTILE_NAMES {
        student_named(&app, name).await;
    }
    let csv = client()
        .get(format!("{}/instructor/grades.csv", app.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
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

#[tokio::test]
async fn junk_requests_do_not_grow_the_metrics_label_set() {
    let app = spawn().await;
    let marker = "zq7junk";
    for i in 0..30 {
        let _ = client()
            .get(format!("{}/{marker}/{i}", app.base))
            .send()
            .await
            .unwrap();
        let _ = client()
            .get(format!("{}/api/jobs/{marker}{i}", app.base))
            .send()
            .await
            .unwrap();
        let _ = client()
            .get(format!("{}/static/{marker}{i}.css", app.base))
            .send()
            .await
            .unwrap();
    }
    for (method, path) in [
        ("PUT", "/api/experiments/transfer"),
        ("DELETE", "/api/jobs/1"),
        ("PATCH", "/"),
        ("POST", "/static/css/site.css"),
        ("GET", "/api/experiments/training"),
        ("POST", "/healthz"),
        ("POST", "/metrics"),
    ] {
        let response = client()
            .request(method.parse().unwrap(), format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        assert!(
            response.status().is_client_error(),
            "{method} {path}: {}",
            response.status()
        );
    }
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(!metrics.contains(marker), "a raw path became a label");
    let routes: std::collections::BTreeSet<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("gpulab_http_requests_total{"))
        .filter_map(|l| l.split("route=\"").nth(1)?.split('"').next())
        .collect();
    assert!(
        routes.len() <= 40,
        "{} route labels: {routes:?}",
        routes.len()
    );
    assert!(
        metrics
            .lines()
            .filter(|l| l.starts_with("gpulab_http_requests_total{"))
            .all(|l| !l.contains("status=\"5")),
        "no 5xx counted:\n{metrics}"
    );
}

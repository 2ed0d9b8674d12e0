//! Hostile clients for tests: a plain client that sends one fixed student cookie and
//! stores none (tests/abuse has clients without one), requests sent byte for byte (no URL
//! normalisation, any header bytes), and the two shapes every error must have — JSON
//! `{"error": {"status", "message"}}` under `/api/`, an HTML page elsewhere.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::Value;

use super::TestApp;

/// A client with a student cookie of its own that stores no cookies and follows no
/// redirects: its writes reach the handlers (and their validation).
pub(crate) fn client() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::COOKIE,
        format!("gpulab_student={}", super::student_id())
            .parse()
            .unwrap(),
    );
    reqwest::Client::builder()
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Asserts a JSON error body `{"error": {"status", "message"}}` with one of `statuses`.
pub(crate) async fn json_error(
    response: reqwest::Response,
    statuses: &[u16],
    context: &str,
) -> String {
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
pub(crate) async fn html_error(
    response: reqwest::Response,
    statuses: &[u16],
    context: &str,
) -> String {
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

pub(crate) fn content_type(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// The answer to a request sent byte for byte (no URL normalisation, any header bytes).
pub(crate) struct Raw {
    /// The status code (0: the server closed the connection without answering).
    pub status: u16,
    /// The status line and headers.
    pub head: String,
    /// The body bytes.
    pub body: Vec<u8>,
}

/// Sends `request` as-is on a fresh connection and reads until the server closes it.
/// Status 0: the server closed the connection without answering.
pub(crate) async fn raw(app: &TestApp, request: Vec<u8>) -> Raw {
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

pub(crate) fn get_request(target: &[u8], extra_headers: &[u8]) -> Vec<u8> {
    [
        b"GET ".as_slice(),
        target,
        b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n",
        extra_headers,
        b"\r\n",
    ]
    .concat()
}

/// `POST` `body` to `path` labelled `content_type`, as a student with a cookie.
pub(crate) async fn post_as(
    app: &TestApp,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> reqwest::Response {
    client()
        .post(format!("{}{path}", app.base))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap()
}

/// The `error.message` of a JSON error body.
pub(crate) fn message(body: &Value) -> &str {
    body["error"]["message"].as_str().unwrap_or_default()
}

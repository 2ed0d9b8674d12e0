//! Requests no browser sends: a body that never arrives, bodies under the wrong label,
//! forged and huge cookies, traversal on /static, very long URLs sent byte for byte
//! (reqwest would normalise them), odd job ids, path parameters that are not UTF-8, and
//! junk that must not grow the metrics' label set.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::client::set_cookie;
use crate::support::hostile::{client, get_request, html_error, json_error, raw};
use crate::support::{spawn, spawn_tuned};

#[tokio::test]
async fn a_body_that_never_arrives_is_answered_within_the_request_timeout() {
    let app = spawn_tuned(|config| config.limits.request_timeout_secs = 2).await;
    // Declares 10 MB and sends two bytes: the server must not wait for ever.
    let started = std::time::Instant::now();
    let answer = raw(
        &app,
        format!(
            "POST /api/experiments/timing HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: gpulab_student={}\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\nConnection: close\r\n\r\n{{}}",
            crate::support::student_id()
        )
        .into_bytes(),
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
        let set = set_cookie(&response).to_string();
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

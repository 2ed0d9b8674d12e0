//! HTTP tests against the app on a real port: the home page, every lesson, the 404
//! page, and static assets with their content type, compression and cache headers.

use reqwest::StatusCode;
use reqwest::header::{CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, ETAG, IF_NONE_MATCH};

use crate::support::{escaped, spawn};

#[tokio::test]
async fn home_lists_every_lesson_with_summary_and_minutes() {
    let app = spawn().await;
    let response = app.get("/").await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = response.text().await.unwrap();
    assert_eq!(
        app.state.course.lessons.len(),
        9,
        "the syllabus has nine lessons"
    );
    for lesson in &app.state.course.lessons {
        assert!(
            html.contains(&format!("href=\"/lessons/{}\"", lesson.slug)),
            "{}",
            lesson.slug
        );
        assert!(
            html.contains(&escaped(&lesson.title)),
            "title of {}",
            lesson.slug
        );
        assert!(
            html.contains(&escaped(&lesson.summary)),
            "summary of {}",
            lesson.slug
        );
        assert!(html.contains(&format!("{} min read", lesson.minutes)));
    }
}

#[tokio::test]
async fn every_lesson_renders_with_code_math_toc_and_neighbours() {
    let app = spawn().await;
    let course = &app.state.course;
    assert!(
        course.lessons.iter().all(|l| l.code_count > 0),
        "every lesson has code samples"
    );
    assert!(
        course.lessons.iter().any(|l| l.math_count > 0),
        "some lesson has math"
    );
    for (i, lesson) in course.lessons.iter().enumerate() {
        let response = app.get(&format!("/lessons/{}", lesson.slug)).await;
        assert_eq!(response.status(), StatusCode::OK, "{}", lesson.slug);
        let html = response.text().await.unwrap();
        assert!(
            html.contains(&format!(
                "<h1 id=\"lesson-title\">{}</h1>",
                escaped(&lesson.title)
            )),
            "{}",
            lesson.slug
        );
        assert!(
            html.contains("class=\"hl-"),
            "{}: highlighted code",
            lesson.slug
        );
        if lesson.math_count > 0 {
            assert!(html.contains("<math"), "{}: MathML", lesson.slug);
        }
        for entry in &lesson.toc {
            assert!(
                html.contains(&format!("href=\"#{}\"", entry.id)),
                "{}: toc {}",
                lesson.slug,
                entry.id
            );
            assert!(
                html.contains(&format!("id=\"{}\"", entry.id)),
                "{}: heading {}",
                lesson.slug,
                entry.id
            );
        }
        for section in ["common-mistakes", "practice", "recap"] {
            assert!(
                lesson.toc.iter().any(|e| e.id == section),
                "{} lacks a {section} section",
                lesson.slug
            );
        }
        if let Some(next) = course.lessons.get(i + 1) {
            assert!(html.contains(&format!("rel=\"next\" href=\"/lessons/{}\"", next.slug)));
        }
        if i > 0 {
            let prev = &course.lessons[i - 1];
            assert!(html.contains(&format!("rel=\"prev\" href=\"/lessons/{}\"", prev.slug)));
        }
    }
}

#[tokio::test]
async fn missing_pages_get_the_404_page() {
    let app = spawn().await;
    for path in [
        "/lessons/no-such-lesson",
        "/no/such/page",
        "/static/../Cargo.toml",
        "/static/css/nope.css",
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        let html = response.text().await.unwrap();
        assert!(html.contains("Page not found"), "{path}: {html}");
        assert!(html.contains("href=\"/\""), "{path}: link home");
    }
}

#[tokio::test]
async fn about_page_explains_how_to_run_it() {
    let app = spawn().await;
    let html = app.get("/about").await.text().await.unwrap();
    assert!(html.contains("cargo run --release"));
    assert!(html.contains("id=\"gpu-status\""));
    assert!(
        html.contains("data-experiment=\"device-card\""),
        "the live device card"
    );
}

#[tokio::test]
async fn static_assets_have_type_compression_and_cache_headers() {
    let app = spawn().await;
    let client = reqwest::Client::new();
    let url = format!("{}/static/css/site.css", app.base);
    let response = client
        .get(&url)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(headers[CONTENT_TYPE], "text/css; charset=utf-8");
    assert_eq!(headers[CONTENT_ENCODING], "gzip");
    assert_eq!(headers[CACHE_CONTROL], "no-cache");
    let etag = headers[ETAG].to_str().unwrap().to_string();
    let compressed = response.bytes().await.unwrap();
    let original = app.state.assets.get("css/site.css").unwrap().bytes().len();
    assert!(
        compressed.len() < original / 2,
        "{} vs {original}",
        compressed.len()
    );

    let revalidated = client
        .get(&url)
        .header(IF_NONE_MATCH, &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);

    let versioned = app.get("/static/css/site.css?v=0123456789ab").await;
    assert!(
        versioned.headers()[CACHE_CONTROL]
            .to_str()
            .unwrap()
            .contains("immutable")
    );

    let syntax = app.get("/static/css/syntax.css").await;
    assert_eq!(syntax.status(), StatusCode::OK);
    assert!(
        syntax
            .text()
            .await
            .unwrap()
            .contains("prefers-color-scheme: dark")
    );
}

#[tokio::test]
async fn pages_link_versioned_assets_and_send_security_headers() {
    let app = spawn().await;
    let response = app.get("/").await;
    assert!(
        response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'self'")
    );
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    let html = response.text().await.unwrap();
    assert!(html.contains("href=\"/static/css/site.css?v="), "{html}");
}

#[tokio::test]
async fn cookies_are_secure_only_when_the_server_is_told_it_is_behind_https() {
    const TOKEN: &str = "a-token-long-enough-for-the-instructor-0123456789";
    for behind_https in [false, true] {
        let app = crate::support::spawn_tuned(|config| {
            config.behind_https = behind_https;
            config.instructor_token = Some(TOKEN.into());
        })
        .await;
        let first_visit = reqwest::get(format!("{}/", app.base)).await.unwrap();
        let student = crate::support::client::set_cookie(&first_visit);
        let (_, login) = crate::support::client::instructor(&app, TOKEN).await;
        let session = crate::support::client::set_cookie(&login);
        for cookie in [&student, &session] {
            assert!(cookie.contains("HttpOnly"), "{cookie}");
            assert_eq!(cookie.contains("; Secure"), behind_https, "{cookie}");
        }
    }
}

//! Pages and assets are served pre-encoded: Brotli, gzip or as they are, chosen from
//! `Accept-Encoding`, with `Content-Length` (never chunked), a strong ETag per encoding,
//! `304 Not Modified` with no body on a matching `If-None-Match`, hashed asset URLs
//! cached for a year, and the same bytes for every student.

use std::io::Read;

use reqwest::StatusCode;
use reqwest::header::{
    CACHE_CONTROL, CONTENT_ENCODING, CONTENT_LENGTH, ETAG, IF_NONE_MATCH, TRANSFER_ENCODING,
};

use crate::support::{spawn, student};

fn decode(encoding: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    match encoding {
        Some("br") => brotli::BrotliDecompress(&mut &body[..], &mut plain).unwrap(),
        Some("gzip") => {
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut plain)
                .unwrap();
        }
        None => plain.extend_from_slice(body),
        Some(other) => panic!("unexpected encoding {other}"),
    }
    plain
}

#[tokio::test]
async fn every_encoding_of_a_page_decodes_to_the_same_page() {
    let app = spawn().await;
    let client = reqwest::Client::new();
    let url = format!("{}/lessons/inside-the-gpu", app.base);
    let mut pages = Vec::new();
    let mut etags = Vec::new();
    for (accept, expected) in [
        (Some("gzip, deflate, br, zstd"), Some("br")),
        (Some("gzip"), Some("gzip")),
        (Some("br;q=0, gzip;q=1"), Some("gzip")),
        (None, None),
    ] {
        let mut request = client.get(&url);
        if let Some(accept) = accept {
            request = request.header("accept-encoding", accept);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let headers = response.headers().clone();
        let encoding = headers
            .get(CONTENT_ENCODING)
            .map(|v| v.to_str().unwrap().to_string());
        assert_eq!(encoding.as_deref(), expected, "{accept:?}");
        assert!(headers.get(TRANSFER_ENCODING).is_none(), "not chunked");
        assert_eq!(headers[CACHE_CONTROL], "no-cache");
        assert_eq!(headers["vary"], "accept-encoding");
        let body = response.bytes().await.unwrap();
        assert_eq!(
            headers[CONTENT_LENGTH].to_str().unwrap(),
            body.len().to_string()
        );
        etags.push(headers[ETAG].to_str().unwrap().to_string());
        pages.push(decode(encoding.as_deref(), &body));
    }
    assert!(
        pages.windows(2).all(|w| w[0] == w[1]),
        "same page in every encoding"
    );
    let html = String::from_utf8(pages[0].clone()).unwrap();
    assert!(html.contains("<h1") && html.len() > 20_000);
    assert_ne!(
        etags[0], etags[3],
        "each encoding is its own representation"
    );
    assert_eq!(etags[1], etags[2]);
}

#[tokio::test]
async fn a_reload_with_the_etag_gets_304_and_no_body() {
    let app = spawn().await;
    let client = reqwest::Client::new();
    for path in ["/lessons/why-gpus", "/about", "/static/js/lesson.js"] {
        let url = format!("{}{path}", app.base);
        let first = client
            .get(&url)
            .header("accept-encoding", "br")
            .send()
            .await
            .unwrap();
        let etag = first.headers()[ETAG].clone();
        let again = client
            .get(&url)
            .header("accept-encoding", "br")
            .header(IF_NONE_MATCH, etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert!(again.bytes().await.unwrap().is_empty(), "{path}: no body");
        let other = client
            .get(&url)
            .header(IF_NONE_MATCH, "\"0123\"")
            .send()
            .await
            .unwrap();
        assert_eq!(
            other.status(),
            StatusCode::OK,
            "{path}: a stale ETag gets the page"
        );
    }
}

#[tokio::test]
async fn hashed_assets_are_immutable_and_pages_are_the_same_for_every_student() {
    let app = spawn().await;
    let (ann, bob) = (student(), student());
    let page = |client: reqwest::Client| {
        let url = format!("{}/lessons/training-step", app.base);
        async move { client.get(&url).send().await.unwrap() }
    };
    let (a, b) = (page(ann).await, page(bob).await);
    assert_eq!(
        a.headers()[ETAG],
        b.headers()[ETAG],
        "no per-student bytes in a lesson page"
    );
    let html = a.text().await.unwrap();
    let script = html
        .split("src=\"")
        .find_map(|s| s.strip_prefix("/static/js/lesson.js?v="))
        .and_then(|s| s.split('"').next())
        .expect("the lesson links its script by hash");
    let asset = app.get(&format!("/static/js/lesson.js?v={script}")).await;
    assert_eq!(
        asset.headers()[CACHE_CONTROL],
        "public, max-age=31536000, immutable"
    );
    let hash = app
        .state
        .assets
        .get("js/lesson.js")
        .unwrap()
        .hash()
        .to_string();
    assert!(hash.starts_with(script), "the URL carries the content hash");
}

/// The compression layer passes pre-encoded responses by and still compresses dynamic
/// ones: a page keeps one `Vary`, its `Content-Encoding` and `Content-Length`, the
/// security headers and a new visitor's cookie (on HEAD too); a JSON body over 1 KiB is
/// compressed with `Vary` added; a request refusing every coding gets 406 either way.
#[tokio::test]
async fn pre_encoded_responses_pass_the_compression_layer_and_dynamic_ones_are_compressed() {
    let app = spawn().await;
    let client = reqwest::Client::new();
    let page = format!("{}/lessons/inside-the-gpu", app.base);
    let get = client
        .get(&page)
        .header("accept-encoding", "gzip, deflate, br, zstd")
        .send()
        .await
        .unwrap();
    let head = client
        .head(&page)
        .header("accept-encoding", "gzip, deflate, br, zstd")
        .send()
        .await
        .unwrap();
    for response in [&get, &head] {
        let headers = response.headers();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(headers[CONTENT_ENCODING], "br");
        assert_eq!(headers.get_all("vary").iter().count(), 1, "{headers:?}");
        assert_eq!(headers["vary"], "accept-encoding");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["referrer-policy"], "same-origin");
        assert!(headers.contains_key("content-security-policy"));
        assert!(
            headers["set-cookie"]
                .to_str()
                .unwrap()
                .starts_with("gpulab_student=")
        );
        assert!(headers.get(TRANSFER_ENCODING).is_none(), "not chunked");
    }
    assert_eq!(
        get.headers()[CONTENT_LENGTH],
        head.headers()[CONTENT_LENGTH]
    );
    let body = get.bytes().await.unwrap();
    assert!(
        String::from_utf8(decode(Some("br"), &body))
            .unwrap()
            .contains("<h1")
    );
    assert!(head.bytes().await.unwrap().is_empty(), "HEAD has no body");

    let json = format!("{}/api/openapi.json", app.base);
    let compressed = client
        .get(&json)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(compressed.status(), StatusCode::OK);
    assert_eq!(compressed.headers()[CONTENT_ENCODING], "gzip");
    assert_eq!(compressed.headers()["vary"], "accept-encoding");
    assert_eq!(compressed.headers()["x-content-type-options"], "nosniff");
    let body = compressed.bytes().await.unwrap();
    let document: serde_json::Value = serde_json::from_slice(&decode(Some("gzip"), &body)).unwrap();
    assert!(document["paths"].is_object());
    let plain = client.get(&json).send().await.unwrap();
    assert!(plain.headers().get(CONTENT_ENCODING).is_none());
    assert!(plain.bytes().await.unwrap().len() > body.len());

    for url in [&page, &json] {
        let refused = client
            .get(url)
            .header("accept-encoding", "identity;q=0")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), StatusCode::NOT_ACCEPTABLE, "{url}");
    }
}

//! Responses prepared once and served many times: a lesson page or a static file, held
//! as `Bytes` with its Brotli and gzip encodings, a strong ETag per encoding and its
//! content type. A request picks the best encoding it accepts (q-values honoured),
//! gets `Content-Length` (never chunked) and no copy of the body, or `304 Not Modified`
//! when its `If-None-Match` names a current ETag. Nothing is compressed per request.
//!
//! Encodings are computed once per process: identical bytes (the same page or file in
//! every server a test process starts) share one cache entry, and the server warms the
//! cache on a background thread at start-up, so the first student does not pay for it.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use sha2::{Digest, Sha256};

/// Bodies smaller than this are sent as they are: compression would save next to nothing.
const COMPRESS_FROM: usize = 1024;

/// A content coding a client may accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// Brotli.
    Br,
    /// gzip.
    Gzip,
    /// As is.
    Identity,
}

/// The coding to send for `accept` (an `Accept-Encoding` value): Brotli, then gzip, then
/// identity, skipping any the client refuses with `q=0`. Allocation-free: it runs on
/// every page view.
pub fn negotiate(accept: Option<&str>) -> Coding {
    let Some(accept) = accept else {
        return Coding::Identity;
    };
    // The q-value each name was given (None: not named); a later mention wins.
    let (mut br, mut gzip, mut any) = (None, None, None);
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let name = parts.next().unwrap_or("").trim();
        let q = parts
            .find_map(|p| p.trim().strip_prefix("q="))
            .and_then(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if name.eq_ignore_ascii_case("br") {
            br = Some(q);
        } else if name.eq_ignore_ascii_case("gzip") {
            gzip = Some(q);
        } else if name == "*" {
            any = Some(q);
        }
    }
    let accepts = |q: Option<f32>| q.or(any).is_some_and(|q| q > 0.0);
    if accepts(br) {
        Coding::Br
    } else if accepts(gzip) {
        Coding::Gzip
    } else {
        Coding::Identity
    }
}

/// One resource in every encoding it is served in.
pub struct Encoded {
    identity: Bytes,
    br: OnceLock<Option<Bytes>>,
    gzip: OnceLock<Option<Bytes>>,
    hash: String,
    /// The ETags of identity, Brotli and gzip, built once.
    etags: [HeaderValue; 3],
    content_type: HeaderValue,
}

fn cache() -> &'static Mutex<HashMap<[u8; 32], Arc<Encoded>>> {
    static CACHE: OnceLock<Mutex<HashMap<[u8; 32], Arc<Encoded>>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

impl Encoded {
    /// `bytes` served as `content_type`; shared with any earlier resource of the same
    /// bytes and type in this process.
    pub fn new(bytes: Vec<u8>, content_type: &str) -> Arc<Self> {
        let mut digest = Sha256::new();
        digest.update(content_type.as_bytes());
        digest.update([0]);
        digest.update(&bytes);
        let key: [u8; 32] = digest.finalize().into();
        let mut cache = cache()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(cache.entry(key).or_insert_with(|| {
            let hash: String = key.iter().take(16).map(|b| format!("{b:02x}")).collect();
            let etag = |suffix: &str| {
                HeaderValue::from_str(&format!("\"{hash}{suffix}\""))
                    .expect("hex digits make a valid header value")
            };
            Arc::new(Self {
                etags: [etag(""), etag("-br"), etag("-gz")],
                hash,
                content_type: HeaderValue::from_str(content_type)
                    .unwrap_or(HeaderValue::from_static("application/octet-stream")),
                identity: bytes.into(),
                br: OnceLock::new(),
                gzip: OnceLock::new(),
            })
        }))
    }

    /// The body as stored.
    pub fn bytes(&self) -> &Bytes {
        &self.identity
    }

    /// The content hash (32 hex digits), for versioned URLs.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The content type sent with it.
    pub fn content_type(&self) -> &HeaderValue {
        &self.content_type
    }

    /// The strong ETag of one encoding: each encoding is its own representation.
    pub fn etag(&self, coding: Coding) -> &HeaderValue {
        let index = match coding {
            Coding::Identity => 0,
            Coding::Br => 1,
            Coding::Gzip => 2,
        };
        &self.etags[index]
    }

    fn compressible(&self) -> bool {
        let kind = self.content_type.to_str().unwrap_or("");
        self.identity.len() >= COMPRESS_FROM
            && (kind.starts_with("text/")
                || kind.contains("javascript")
                || kind.contains("json")
                || kind.contains("svg"))
    }

    /// The body in `coding`, computing it on first use; `None` when it is not sent in
    /// that coding (too small, already compressed, or no smaller).
    pub fn body(&self, coding: Coding) -> Option<&Bytes> {
        let encoded = match coding {
            Coding::Identity => return Some(&self.identity),
            Coding::Br => self.br.get_or_init(|| self.compress(coding)),
            Coding::Gzip => self.gzip.get_or_init(|| self.compress(coding)),
        };
        encoded.as_ref()
    }

    fn compress(&self, coding: Coding) -> Option<Bytes> {
        if !self.compressible() {
            return None;
        }
        let mut out = Vec::with_capacity(self.identity.len() / 3);
        match coding {
            Coding::Br => {
                // Quality 10 is within about 3% of 11's size at about a third of its time.
                // Its hasher is a binary tree of 2 × 2^lgwin entries, so the window is
                // only as large as the body needs (brotli's window holds 2^lgwin − 16
                // bytes): with lgwin 22 every body took a 32 MiB table, and glibc kept
                // the memory after the start-up warm-up (idle RSS 59 MiB, against 42
                // with its mmap threshold pinned).
                let lgwin =
                    (usize::BITS - (self.identity.len() + 16).leading_zeros()).clamp(16, 22);
                let params = brotli::enc::BrotliEncoderParams {
                    quality: 10,
                    lgwin: lgwin as i32,
                    ..Default::default()
                };
                brotli::BrotliCompress(&mut &self.identity[..], &mut out, &params).ok()?;
            }
            Coding::Gzip => {
                let mut encoder =
                    flate2::write::GzEncoder::new(&mut out, flate2::Compression::best());
                encoder.write_all(&self.identity).ok()?;
                encoder.finish().ok()?;
            }
            Coding::Identity => return None,
        }
        (out.len() < self.identity.len()).then(|| out.into())
    }

    /// Computes every encoding now (the start-up warm-up).
    pub fn warm(&self) {
        self.body(Coding::Br);
        self.body(Coding::Gzip);
    }

    /// The response to a GET with `request` headers, cached by browsers as `cache_control`.
    pub fn respond(&self, request: &CacheHeaders, cache_control: HeaderValue) -> Response {
        let accept = request
            .accept_encoding
            .as_ref()
            .and_then(|v| v.to_str().ok());
        let wanted = negotiate(accept);
        let (coding, body) = match self.body(wanted) {
            Some(body) => (wanted, body),
            None => (Coding::Identity, &self.identity),
        };
        let etag = self.etag(coding).clone();
        // Any current ETag matches: each encoding decodes to the same bytes.
        let matches = request
            .if_none_match
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .is_some_and(|list| {
                list.split(',')
                    .map(|t| t.trim().trim_start_matches("W/"))
                    .any(|t| t == "*" || self.etags.iter().any(|e| e.as_bytes() == t.as_bytes()))
            });
        // Room for these headers and those the layers above add (the student cookie, the
        // security headers): the map is sized once rather than grown and rehashed.
        let mut headers = HeaderMap::with_capacity(12);
        headers.insert(header::ETAG, etag);
        headers.insert(header::CACHE_CONTROL, cache_control);
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        if matches {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::NOT_MODIFIED;
            *response.headers_mut() = headers;
            return response;
        }
        headers.insert(header::CONTENT_TYPE, self.content_type.clone());
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
        if coding != Coding::Identity {
            let name = if coding == Coding::Br { "br" } else { "gzip" };
            headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static(name));
        }
        let mut response = Response::new(Body::from(body.clone()));
        *response.headers_mut() = headers;
        response
    }
}

/// The two request headers a prepared page or file answers to (`Accept-Encoding`,
/// `If-None-Match`), taken without copying the whole header map: page views are the
/// hottest path the server has.
#[derive(Debug, Default, Clone)]
pub struct CacheHeaders {
    /// `Accept-Encoding`, when sent.
    pub accept_encoding: Option<axum::http::HeaderValue>,
    /// `If-None-Match`, when sent.
    pub if_none_match: Option<axum::http::HeaderValue>,
}

impl CacheHeaders {
    /// The two headers out of `headers`.
    pub fn from_headers(headers: &axum::http::HeaderMap) -> Self {
        use axum::http::header;
        Self {
            accept_encoding: headers.get(header::ACCEPT_ENCODING).cloned(),
            if_none_match: headers.get(header::IF_NONE_MATCH).cloned(),
        }
    }
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for CacheHeaders {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Self::from_headers(&parts.headers))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_prefers_brotli_and_honours_q_zero() {
        assert_eq!(negotiate(None), Coding::Identity);
        assert_eq!(negotiate(Some("gzip, deflate, br, zstd")), Coding::Br);
        assert_eq!(negotiate(Some("gzip")), Coding::Gzip);
        assert_eq!(negotiate(Some("br;q=0, gzip;q=0.5")), Coding::Gzip);
        assert_eq!(negotiate(Some("*")), Coding::Br);
        assert_eq!(negotiate(Some("*;q=0")), Coding::Identity);
        assert_eq!(negotiate(Some("identity")), Coding::Identity);
    }

    #[test]
    fn encodings_decode_to_the_same_bytes_and_small_bodies_stay_plain() {
        let page = "<p>GPU Lab</p>\n".repeat(500).into_bytes();
        let encoded = Encoded::new(page.clone(), "text/html; charset=utf-8");
        let br = encoded.body(Coding::Br).unwrap();
        let mut plain = Vec::new();
        brotli::BrotliDecompress(&mut &br[..], &mut plain).unwrap();
        assert_eq!(plain, page);
        let gz = encoded.body(Coding::Gzip).unwrap();
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
        assert_eq!(plain, page);
        assert!(br.len() < page.len() / 10);
        let tiny = Encoded::new(b"ok".to_vec(), "text/plain");
        assert!(tiny.body(Coding::Br).is_none());
        assert!(
            Arc::ptr_eq(&encoded, &Encoded::new(page, "text/html; charset=utf-8")),
            "the same bytes share one entry"
        );
    }

    #[test]
    fn a_current_etag_gets_304_with_no_body() {
        let encoded = Encoded::new("x".repeat(4096).into_bytes(), "text/css");
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("br"));
        let first = encoded.respond(
            &CacheHeaders::from_headers(&headers),
            HeaderValue::from_static("no-cache"),
        );
        assert_eq!(first.headers()[header::CONTENT_ENCODING], "br");
        let etag = first.headers()[header::ETAG].clone();
        headers.insert(header::IF_NONE_MATCH, etag);
        let again = encoded.respond(
            &CacheHeaders::from_headers(&headers),
            HeaderValue::from_static("no-cache"),
        );
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert!(again.headers().get(header::CONTENT_LENGTH).is_none());
    }
}

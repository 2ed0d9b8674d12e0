//! Who is asking: every visitor gets a random student id in an HttpOnly, SameSite cookie
//! on first visit, and handlers read it as the [`StudentId`] request extension (attached
//! by [`student_layer`](super::student_layer), which uses the functions here). No login:
//! the id is the student's progress key; a display name is optional. Behind an HTTPS
//! proxy (`--behind-https`) every cookie is also `Secure` ([`CookiePolicy`]).
//!
//! This runs on every page view, and a client without the cookie (a crawler, a load
//! test, a first visit) gets a new id each time: the id's random bits come from a
//! per-thread pool refilled from the operating system 256 ids at a time rather than a
//! system call each, and the cookie header is written out directly.
//! Also the request's peer address ([`peer`]), which the per-address limits read.

use std::cell::RefCell;

use axum::http::header::COOKIE;
use axum::http::{HeaderMap, HeaderValue};

/// Name of the student cookie.
pub const STUDENT_COOKIE: &str = "gpulab_student";

/// The student making this request (32 lower-case hex digits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudentId(pub String);

/// Random bytes from the operating system, handed out once each.
struct Pool {
    bytes: [u8; 4096],
    /// How many of `bytes` have been handed out.
    used: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = const {
        RefCell::new(Pool { bytes: [0; 4096], used: 4096 })
    };
}

/// 16 random bytes from this thread's pool, refilled from the OS when spent. Every byte
/// comes from the OS source and is handed out once, so ids stay as unpredictable as a
/// `getrandom` call each.
fn random_bytes() -> [u8; 16] {
    POOL.with_borrow_mut(|pool| {
        if pool.used + 16 > pool.bytes.len() {
            // The OS random source failing is not something a web server can recover from.
            getrandom::fill(&mut pool.bytes)
                .expect("the operating system's random source is available");
            pool.used = 0;
        }
        let mut out = [0u8; 16];
        out.copy_from_slice(&pool.bytes[pool.used..pool.used + 16]);
        // Spent bytes are cleared: nothing later in this thread can read them back.
        pool.bytes[pool.used..pool.used + 16].fill(0);
        pool.used += 16;
        out
    })
}

/// 128 random bits as 32 hex digits, for student ids and instructor sessions.
pub fn random_token() -> String {
    let bytes = random_bytes();
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(32);
    for b in bytes {
        text.push(char::from(HEX[usize::from(b >> 4)]));
        text.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    text
}

/// Whether `value` looks like an id we issued (anything else is replaced, not trusted).
pub fn is_valid_id(value: &str) -> bool {
    value.len() == 32
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// How this server's cookies are marked: `Secure` when it is reached over HTTPS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CookiePolicy {
    /// Mark cookies `Secure` (browsers then send them over HTTPS only).
    pub secure: bool,
}

impl CookiePolicy {
    /// The policy `config` asks for.
    pub fn of(config: &crate::config::Config) -> Self {
        Self {
            secure: config.behind_https,
        }
    }
}

/// Builds a cookie that scripts cannot read and other sites cannot send (and, behind
/// HTTPS, that travels over HTTPS only): `HttpOnly`, `SameSite=Lax`, `Path=/`, a
/// `Max-Age`, and `Secure` when `policy` asks.
pub fn private_cookie(
    name: &'static str,
    value: String,
    max_age_days: i64,
    policy: CookiePolicy,
) -> HeaderValue {
    let secure = if policy.secure { "; Secure" } else { "" };
    let max_age = max_age_days.saturating_mul(24 * 60 * 60).to_string();
    // Written into a string of its final length: `format!` guessed too small and grew it,
    // and that realloc (which takes glibc's arena lock, unlike malloc's thread cache) was
    // 5% of the samples of cookieless page views under load.
    let parts = [
        name,
        "=",
        &value,
        "; HttpOnly; SameSite=Lax",
        secure,
        "; Path=/; Max-Age=",
        &max_age,
    ];
    let mut text = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    parts.iter().for_each(|p| text.push_str(p));
    HeaderValue::try_from(text).expect("cookie built from hex and ASCII is a valid header")
}

/// The value of the `name` cookie in `headers`, when sent (the first one, as a browser
/// sends the most specific first). Read without parsing every cookie into a jar.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (key, value) = pair.trim().split_once('=')?;
            (key.trim() == name).then(|| value.trim())
        })
}

/// The peer address of a request served by `web::serve` (absent in unit tests that
/// call the router directly).
pub fn peer(request_extensions: &axum::http::Extensions) -> Option<std::net::SocketAddr> {
    request_extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_valid_ids_and_differ() {
        let (a, b) = (random_token(), random_token());
        assert!(is_valid_id(&a) && is_valid_id(&b));
        assert_ne!(a, b);
        assert!(!is_valid_id("../../etc/passwd"));
        assert!(!is_valid_id(&a.to_uppercase()));
    }

    #[test]
    fn pooled_tokens_do_not_repeat_across_refills() {
        // 600 ids span more than two refills of the 256-id pool.
        let ids: std::collections::HashSet<String> = (0..600).map(|_| random_token()).collect();
        assert_eq!(ids.len(), 600);
        assert!(ids.iter().all(|id| is_valid_id(id)));
    }

    #[test]
    fn the_student_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=1;gpulab_student=abc ; b=2"),
        );
        assert_eq!(cookie(&headers, STUDENT_COOKIE), Some("abc"));
        assert_eq!(cookie(&headers, "b"), Some("2"));
        assert_eq!(cookie(&headers, "gpulab"), None);
        headers.append(COOKIE, HeaderValue::from_static("later=x"));
        assert_eq!(cookie(&headers, "later"), Some("x"));
    }

    #[test]
    fn cookies_are_http_only_and_same_site() {
        let header = private_cookie(STUDENT_COOKIE, random_token(), 1, CookiePolicy::default());
        let text = header.to_str().unwrap();
        assert!(
            text.contains("HttpOnly") && text.contains("SameSite=Lax") && text.contains("Path=/"),
            "{text}"
        );
        assert!(
            !text.contains("Secure"),
            "plain http keeps its cookies: {text}"
        );
        let behind_https = CookiePolicy { secure: true };
        let header = private_cookie(STUDENT_COOKIE, random_token(), 1, behind_https);
        assert!(header.to_str().unwrap().contains("; Secure"), "{header:?}");
        let day = private_cookie("s", "v".into(), 1, CookiePolicy::default());
        assert!(
            day.to_str().unwrap().ends_with("; Max-Age=86400"),
            "{day:?}"
        );
    }
}

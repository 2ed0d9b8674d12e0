//! Who is asking: every visitor gets a random student id in an HttpOnly, SameSite cookie
//! on first visit, and handlers read it as the [`StudentId`] request extension. No login:
//! the id is the student's progress key; a display name is optional. Behind an HTTPS
//! proxy (`--behind-https`) every cookie is also `Secure` ([`CookiePolicy`]).

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::http::header::SET_COOKIE;
use axum::middleware::Next;
use axum::response::Response;
use axum_extra::extract::CookieJar;
use axum_extra::extract::cookie::{Cookie, SameSite};

/// Name of the student cookie.
pub const STUDENT_COOKIE: &str = "gpulab_student";

/// The student making this request (32 lower-case hex digits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StudentId(pub String);

/// Present when this request's student id was minted on it (no valid cookie came):
/// `guard::writes` refuses writes from such ids.
#[derive(Debug, Clone, Copy)]
pub struct NewVisitor;

/// 128 random bits as 32 hex digits, for student ids and instructor sessions.
pub fn random_token() -> String {
    let mut bytes = [0u8; 16];
    // The OS random source failing is not something a web server can recover from.
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
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

/// How this server's cookies are marked: `Secure` when it is reached over HTTPS (a
/// request extension the router adds to every request).
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
/// HTTPS, that travels over HTTPS only).
pub fn private_cookie(
    name: &'static str,
    value: String,
    max_age_days: i64,
    policy: CookiePolicy,
) -> HeaderValue {
    let cookie = Cookie::build((name, value))
        .path("/")
        .http_only(true)
        .secure(policy.secure)
        .same_site(SameSite::Lax)
        .max_age(cookie::time::Duration::days(max_age_days))
        .build();
    HeaderValue::from_str(&cookie.to_string())
        .expect("cookie built from hex and ASCII is a valid header")
}

/// Middleware: attach the student's id, issuing a new one when the cookie is missing
/// or malformed.
pub async fn identify(jar: CookieJar, mut request: Request, next: Next) -> Response {
    let existing = jar
        .get(STUDENT_COOKIE)
        .map(|c| c.value().to_string())
        .filter(|v| is_valid_id(v));
    let fresh = existing.is_none();
    let id = existing.unwrap_or_else(random_token);
    let policy = request
        .extensions()
        .get::<CookiePolicy>()
        .copied()
        .unwrap_or_default();
    request.extensions_mut().insert(StudentId(id.clone()));
    if fresh {
        request.extensions_mut().insert(NewVisitor);
    }
    let mut response = next.run(request).await;
    if fresh {
        response
            .headers_mut()
            .append(SET_COOKIE, private_cookie(STUDENT_COOKIE, id, 365, policy));
    }
    response
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
    }
}

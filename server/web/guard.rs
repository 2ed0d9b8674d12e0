//! The gate in front of every write a student makes (experiments, playground changes,
//! quiz and exam attempts, name changes): writes from a student id minted on that very
//! request are refused — a browser has its cookie from the page it loaded, so only a
//! client that drops cookies arrives without one, and such a client would otherwise get
//! a fresh id, and a fresh share of every per-student cap, on each request — and every
//! network address has a budget of writes per minute, all its students together. IPv6
//! addresses count per /64, the block one machine can choose from freely.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Extension, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::error::{ApiError, AppError};
use super::identity::NewVisitor;

/// A keyed rate limit per network address.
pub struct AddressLimiter {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
    per_minute: u32,
    clock: DefaultClock,
}

impl AddressLimiter {
    /// `per_minute` writes per address (bursts up to that many).
    pub fn new(per_minute: u32) -> Arc<Self> {
        let per_minute = per_minute.max(1);
        let n = NonZeroU32::new(per_minute).expect("at least one");
        Arc::new(Self {
            limiter: RateLimiter::keyed(Quota::per_minute(n).allow_burst(n)),
            per_minute,
            clock: DefaultClock::default(),
        })
    }

    /// `Ok` when `address` may write now; otherwise how long to wait.
    pub fn check(&self, address: IpAddr) -> Result<(), Duration> {
        if self.limiter.len() > 10_000 {
            self.limiter.retain_recent();
        }
        self.limiter
            .check_key(&key(address))
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

/// The address a limit counts: IPv4 as is, IPv6 by its /64 network.
pub fn key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => {
            let mut segments = v6.segments();
            segments[4..].fill(0);
            IpAddr::from(segments)
        }
    }
}

/// Whether `method` changes something.
pub fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Middleware for the student routes (inside the identity middleware): the cookie
/// check, then the address's write budget.
pub async fn writes(
    Extension(limiter): Extension<Arc<AddressLimiter>>,
    request: Request,
    next: Next,
) -> Response {
    if !is_write(request.method()) {
        return next.run(request).await;
    }
    let api = request.uri().path().starts_with("/api/");
    if let Some(refused) = without_cookie(&request) {
        return refuse(api, refused);
    }
    if let Some(address) = super::serve::peer(request.extensions()).map(|p| p.ip())
        && let Err(wait) = limiter.check(address)
    {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        return refuse(
            api,
            AppError::TooMany {
                retry_after_secs: secs,
                message: format!(
                    "Your network address has made {} changes in the last minute, the most one address may (a class behind one address shares this; the instructor can raise it with --writes-per-minute-per-address). Try again in about {secs} s.",
                    limiter.per_minute
                ),
            },
        );
    }
    next.run(request).await
}

/// Middleware for a student write that has a guard of its own (a resume code: wrong
/// codes are slowed by `login_guard`, a right one always works): the cookie check
/// only. Counting it against the address's write budget would let one student guessing
/// codes behind a class's NAT address use up that budget, and refuse the right code of
/// a learner at the same address.
pub async fn cookie_writes(request: Request, next: Next) -> Response {
    let api = request.uri().path().starts_with("/api/");
    match without_cookie(&request) {
        Some(refused) if is_write(request.method()) => refuse(api, refused),
        _ => next.run(request).await,
    }
}

/// The refusal for a write whose student id was minted on this very request.
fn without_cookie(request: &Request) -> Option<AppError> {
    request.extensions().get::<NewVisitor>().map(|_| {
        AppError::Forbidden(
            "This request came without the student cookie this site gives every browser, so it cannot be saved for anyone. Load any course page first (with cookies allowed for this site), then try again.".into(),
        )
    })
}

fn refuse(api: bool, error: AppError) -> Response {
    if api {
        ApiError(error).into_response()
    } else {
        error.into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_counts_per_64_and_each_address_has_its_own_budget() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        assert_eq!(key(a), key(b));
        let limiter = AddressLimiter::new(2);
        assert!(limiter.check(a).is_ok() && limiter.check(b).is_ok());
        assert!(limiter.check(a).is_err(), "the /64 shares one budget");
        assert!(limiter.check("192.0.2.7".parse().unwrap()).is_ok());
        assert!(!is_write(&Method::GET) && is_write(&Method::DELETE));
    }
}

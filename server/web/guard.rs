//! The gate in front of every write a student makes (experiments, playground changes,
//! quiz and exam attempts, name changes): writes from a student id minted on that very
//! request are refused — a browser has its cookie from the page it loaded, so only a
//! client that drops cookies arrives without one, and such a client would otherwise get
//! a fresh id, and a fresh share of every per-student cap, on each request — and every
//! network address has a budget of writes per minute, all its students together. IPv6
//! addresses count per /64, the block one machine can choose from freely.
//! [`student_layer`](super::student_layer) asks [`refusal`] before each student route.
//! Also the gate in front of new work while the database cannot keep its outcome
//! ([`refuse_new_work_unless_writable`]).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::error::{ApiError, AppError};
use crate::db::Db;

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

/// The refusal for a student's request, or `None` when it may go ahead: reads always
/// may; a write is refused when its student id was minted on this very request
/// (`new_visitor`), then when `limiter` (the address's write budget, where the route
/// counts against it) has none left for the peer's address.
pub fn refusal(
    request: &Request,
    new_visitor: bool,
    limiter: Option<&AddressLimiter>,
) -> Option<Response> {
    if !is_write(request.method()) {
        return None;
    }
    let api = request.uri().path().starts_with("/api/");
    if new_visitor {
        return Some(refuse(
            api,
            AppError::Forbidden(
                "This request came without the student cookie this site gives every browser, so it cannot be saved for anyone. Load any course page first (with cookies allowed for this site), then try again.".into(),
            ),
        ));
    }
    let limiter = limiter?;
    let address = super::identity::peer(request.extensions())?.ip();
    let wait = limiter.check(address).err()?;
    let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
    Some(refuse(
        api,
        AppError::TooMany {
            retry_after_secs: secs,
            message: format!(
                "Your network address has made {} changes in the last minute, the most one address may (a class behind one address shares this; the instructor can raise it with --writes-per-minute-per-address). Try again in about {secs} s.",
                limiter.per_minute
            ),
        },
    ))
}

fn refuse(api: bool, error: AppError) -> Response {
    if api {
        ApiError(error).into_response()
    } else {
        error.into_response()
    }
}

/// `Err` (a 503 naming `what` and why) while the database `db` takes no writes: the
/// queue and the playground start nothing whose outcome could not be kept. Probes at
/// most once a second, so this also notices when space returns.
pub async fn refuse_new_work_unless_writable(db: &Db, what: &'static str) -> Result<(), AppError> {
    match db.writability().await.unwritable {
        Some(why) => Err(AppError::Paused { what, why }),
        None => Ok(()),
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

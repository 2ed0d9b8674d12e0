//! Per-student experiment rate limit: a keyed GCRA limiter from `governor`, keyed by
//! the student cookie (the identity middleware issues one to every browser, so the
//! cookie is always there; clients that drop cookies get a fresh id per request and are
//! bounded by the queue length instead). A student over the limit gets 429 with
//! Retry-After; the shared GPU queue stays free for the rest of the class. The
//! experiment handler refuses on it only while another student's experiment waits
//! (`db::fair_share`: alone with the GPU, a learner is not limited); quiz attempts and
//! script checks are refused on it always.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Experiments per minute, per student.
pub struct StudentLimiter {
    limiter: Option<DefaultKeyedRateLimiter<String>>,
    clock: DefaultClock,
}

impl StudentLimiter {
    /// `per_minute` experiments per student (bursts up to that many); 0 switches it off.
    pub fn new(per_minute: u32) -> Self {
        Self {
            limiter: NonZeroU32::new(per_minute)
                .map(|n| RateLimiter::keyed(Quota::per_minute(n).allow_burst(n))),
            clock: DefaultClock::default(),
        }
    }

    /// `Ok` when `student` may submit now; otherwise how long to wait.
    pub fn check(&self, student: &str) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        if limiter.len() > 10_000 {
            limiter.retain_recent();
        }
        limiter
            .check_key(&student.to_string())
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_student_has_their_own_budget() {
        let limiter = StudentLimiter::new(2);
        assert!(limiter.check("ann").is_ok());
        assert!(limiter.check("ann").is_ok());
        let wait = limiter.check("ann").unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert!(
            limiter.check("bob").is_ok(),
            "another student is not affected"
        );
        let off = StudentLimiter::new(0);
        assert!((0..100).all(|_| off.check("ann").is_ok()));
    }
}

//! Guessing the instructor token is made slow: after a few wrong tokens from one network
//! address, that address must wait before its next wrong try, twice as long after each
//! further failure (up to a quarter of an hour); across all addresses together a larger
//! budget applies the same way, so guessing from many machines is slow too. Only wrong
//! secrets meet the guard: callers compare the secret first and accept a right one
//! whatever the guard says, because a class reaches the server through one NAT address
//! and a student guessing there must not lock the instructor (or a learner with their
//! own resume code) out. A right secret does not clear the count either — the guesser
//! may share its address. IPv6 addresses count per /64 (one machine can pick any address
//! in its /64). A guard for secrets too long to guess ([`LoginGuard::per_address`], used for
//! 60-bit resume codes) has no class-wide budget, so one hostile client cannot lock the
//! whole class out. The server also refuses to start with a token shorter than
//! [`MIN_TOKEN_LEN`] characters, and compares SHA-256 digests of the tokens in constant
//! time, so neither a token's content nor its length shows in the timing.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The shortest instructor token the server accepts.
pub const MIN_TOKEN_LEN: usize = 32;
/// Wrong tokens one address may send before it has to wait.
pub const FREE_FAILURES: u32 = 5;
/// Wrong tokens all addresses together may send before everyone has to wait.
pub const FREE_FAILURES_TOTAL: u32 = 50;
/// The longest wait.
pub const MAX_WAIT: Duration = Duration::from_secs(15 * 60);

/// Why a token cannot be used, in words for the instructor starting the server.
pub fn check_token(token: &str) -> Result<(), String> {
    if token.chars().count() >= MIN_TOKEN_LEN {
        Ok(())
    } else {
        Err(format!(
            "the instructor token is {} characters long; use at least {MIN_TOKEN_LEN} random ones, e.g. GPULAB_INSTRUCTOR_TOKEN=$(openssl rand -hex 32) (or python3 -c 'import secrets; print(secrets.token_hex(32))')",
            token.chars().count()
        ))
    }
}

/// Whether `given` is `expected`, in time independent of both.
pub fn tokens_match(expected: &str, given: &str) -> bool {
    Sha256::digest(expected.as_bytes())
        .ct_eq(&Sha256::digest(given.as_bytes()))
        .into()
}

#[derive(Default, Clone, Copy)]
struct Failures {
    count: u32,
    until: Option<Instant>,
    last: Option<Instant>,
}

impl Failures {
    fn wait(&self) -> Option<Duration> {
        self.until
            .and_then(|until| until.checked_duration_since(Instant::now()))
            .filter(|d| !d.is_zero())
    }

    fn fail(&mut self, free: u32) {
        // A quarter of an hour without a wrong try starts the count afresh (a right
        // secret no longer clears it).
        if self.last.is_some_and(|at| at.elapsed() > MAX_WAIT) {
            self.count = 0;
        }
        self.count += 1;
        self.last = Some(Instant::now());
        if self.count >= free {
            let doublings = (self.count - free).min(20);
            let wait = Duration::from_secs(1u64 << doublings).min(MAX_WAIT);
            self.until = Some(Instant::now() + wait);
        }
    }
}

/// Failed sign-ins, per address and (unless made with [`LoginGuard::per_address`]) in
/// total.
pub struct LoginGuard {
    state: Mutex<(HashMap<IpAddr, Failures>, Failures)>,
    /// Wrong attempts all addresses together may make before everyone waits; `None`: no
    /// class-wide budget.
    free_total: Option<u32>,
}

impl Default for LoginGuard {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            free_total: Some(FREE_FAILURES_TOTAL),
        }
    }
}

impl LoginGuard {
    /// A guard that slows each address (IPv6: each /64) but never everyone: for secrets
    /// with enough random bits that guessing from many addresses is hopeless anyway.
    pub fn per_address() -> Self {
        Self {
            state: Mutex::default(),
            free_total: None,
        }
    }

    /// `Err(wait)` when a wrong secret from `address` is to be refused with a 429: that
    /// address (or everyone) must wait before its next wrong try.
    pub fn before_attempt(&self, address: Option<IpAddr>) -> Result<(), Duration> {
        let address = address.map(super::guard::key);
        let state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mine = address
            .and_then(|a| state.0.get(&a))
            .and_then(Failures::wait);
        match mine.into_iter().chain(state.1.wait()).max() {
            Some(wait) => Err(wait),
            None => Ok(()),
        }
    }

    /// Records a wrong secret from `address`.
    pub fn failed(&self, address: Option<IpAddr>) {
        let address = address.map(super::guard::key);
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (by_address, total) = &mut *state;
        if let Some(free) = self.free_total {
            total.fail(free);
        }
        if let Some(address) = address {
            by_address.entry(address).or_default().fail(FREE_FAILURES);
        }
        if by_address.len() > 10_000 {
            by_address.retain(|_, f| {
                f.wait().is_some() || f.last.is_some_and(|at| at.elapsed() < MAX_WAIT)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_tokens_are_refused_with_a_recipe() {
        let error = check_token("hunter2").unwrap_err();
        assert!(error.contains("7 characters") && error.contains("openssl rand -hex 32"));
        assert!(check_token(&"x".repeat(32)).is_ok());
        assert!(tokens_match("a-token", "a-token"));
        assert!(!tokens_match("a-token", "a-token-longer"));
    }

    #[test]
    fn repeated_failures_from_one_address_make_it_wait_longer() {
        let guard = LoginGuard::default();
        let (here, there): (IpAddr, IpAddr) =
            ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        for _ in 0..FREE_FAILURES - 1 {
            assert!(guard.before_attempt(Some(here)).is_ok());
            guard.failed(Some(here));
        }
        guard.failed(Some(here));
        let first = guard.before_attempt(Some(here)).unwrap_err();
        guard.failed(Some(here));
        let second = guard.before_attempt(Some(here)).unwrap_err();
        assert!(second > first, "{first:?} then {second:?}");
        assert!(
            guard.before_attempt(Some(there)).is_ok(),
            "another address is not affected"
        );
        assert!(
            guard.before_attempt(Some(here)).is_err(),
            "the count stays (only wrong secrets are counted, and callers accept a right one first)"
        );
    }

    #[test]
    fn many_addresses_lock_everyone_out_only_where_there_is_a_class_wide_budget() {
        let fail_from_many = |guard: &LoginGuard| {
            for i in 0..=FREE_FAILURES_TOTAL {
                let address = IpAddr::from([198, 51, 100, u8::try_from(i % 250).unwrap()]);
                guard.failed(Some(address));
            }
        };
        let bystander: IpAddr = "203.0.113.9".parse().unwrap();
        let tokens = LoginGuard::default();
        fail_from_many(&tokens);
        assert!(tokens.before_attempt(Some(bystander)).is_err());
        let codes = LoginGuard::per_address();
        fail_from_many(&codes);
        assert!(codes.before_attempt(Some(bystander)).is_ok());
    }

    #[test]
    fn ipv6_neighbours_in_one_64_share_a_count() {
        let guard = LoginGuard::per_address();
        for i in 0..FREE_FAILURES {
            let address: IpAddr = format!("2001:db8:1:2::{:x}", i + 1).parse().unwrap();
            guard.failed(Some(address));
        }
        let neighbour: IpAddr = "2001:db8:1:2::ffff".parse().unwrap();
        assert!(guard.before_attempt(Some(neighbour)).is_err());
        let elsewhere: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(guard.before_attempt(Some(elsewhere)).is_ok());
    }
}

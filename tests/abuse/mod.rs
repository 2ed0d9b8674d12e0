//! One careless or hostile client must not take the class's GPU, memory or server away.
//! Each test reproduces a finding of the abuse probe against the real binary on loopback
//! and asserts the fix, bounded in time and count: reduced in CI, the probe's full size
//! with `ABUSE_FULL=1`. "Another machine" is a client bound to 127.0.0.2: every
//! 127.0.0.0/8 address reaches the server, and the server tells them apart.

mod connections;
mod memory;
mod queue;
mod students;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::support::BinaryServer;

/// `ci` in CI, `full` with `ABUSE_FULL=1`.
pub(crate) fn scale(ci: usize, full: usize) -> usize {
    if std::env::var_os("ABUSE_FULL").is_some() {
        full
    } else {
        ci
    }
}

/// A real server with `args`, on a fresh database (kept as long as the server).
pub(crate) struct Server {
    pub server: BinaryServer,
    _dir: tempfile::TempDir,
}

impl Server {
    pub(crate) fn start(args: &[&str]) -> Self {
        Self::start_with(args, &[], &[])
    }

    pub(crate) fn start_with(args: &[&str], env: &[(&str, &str)], prefix: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let server = BinaryServer::launch(&dir.path().join("gpulab.db"), args, env, prefix);
        Self { server, _dir: dir }
    }

    pub(crate) fn base(&self) -> &str {
        &self.server.base
    }

    pub(crate) fn database(&self) -> std::path::PathBuf {
        self._dir.path().join("gpulab.db")
    }
}

/// A client from `address`, keeping no connection between requests when `fresh`.
pub(crate) fn client_from(address: &str, cookie: Option<&str>) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(id) = cookie {
        headers.insert(
            reqwest::header::COOKIE,
            format!("gpulab_student={id}").parse().unwrap(),
        );
    }
    reqwest::Client::builder()
        .local_address(address.parse::<IpAddr>().unwrap())
        .default_headers(headers)
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// The round-trip times of `n` `/healthz` requests, each on a new connection, sorted; a
/// request that fails counts as the client's 20 s timeout.
///
/// Tests judge them by what a lockout or a stall does, not by their slowest few: one
/// scheduling hiccup of a loaded 2-core box can take any single request past 50 ms, but
/// a locked-out student gets no answer and a blocked async worker slows a whole run.
pub(crate) struct Latencies(Vec<Duration>);

impl Latencies {
    pub(crate) async fn of_healthz(base: &str, n: usize) -> Self {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        // One unmeasured request first: the client's own set-up is not the server's latency.
        let _ = client.get(format!("{base}/healthz")).send().await;
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let started = Instant::now();
            let ok = client
                .get(format!("{base}/healthz"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            times.push(if ok {
                started.elapsed()
            } else {
                Duration::from_secs(20)
            });
        }
        times.sort();
        Self(times)
    }

    /// The `q` quantile (0..=1), nearest rank.
    pub(crate) fn quantile(&self, q: f64) -> Duration {
        let n = self.0.len();
        let rank = ((n as f64 * q).ceil() as usize).clamp(1, n);
        self.0[rank - 1]
    }

    /// The share of requests slower than `limit`.
    pub(crate) fn share_over(&self, limit: Duration) -> f64 {
        self.0.iter().filter(|t| **t > limit).count() as f64 / self.0.len() as f64
    }

    pub(crate) fn slowest(&self) -> Duration {
        *self.0.last().unwrap()
    }
}

/// The value of an unlabelled metric (or one with exactly `labels`) in `/metrics`.
pub(crate) async fn metric(base: &str, name_and_labels: &str) -> Option<f64> {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find(|l| l.starts_with(name_and_labels) && l[name_and_labels.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// The server's resident memory once its start-up work is over: the thread that
/// compresses every page and asset has said it finished, the engine's ceilings are
/// measured (they fill two 64 MiB buffers), and then two readings half a second apart
/// differ by less than 256 KiB (at most 20 s of waiting).
pub(crate) async fn settled_resident_bytes(server: &crate::support::BinaryServer) -> u64 {
    let precompressed =
        server.wait_for_log("pages and assets precompressed", Duration::from_secs(60));
    assert!(
        precompressed,
        "the server never said its pages were precompressed"
    );
    let device = format!("{}/api/device", server.base);
    let mut measured = false;
    for _ in 0..600 {
        let body: serde_json::Value = reqwest::get(&device).await.unwrap().json().await.unwrap();
        if !body["ceilings"].is_null() {
            measured = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        measured,
        "the engine's ceilings were not measured within 60 s"
    );
    let mut last = server.resident_bytes();
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = server.resident_bytes();
        if now.abs_diff(last) < 256 << 10 {
            return now;
        }
        last = now;
    }
    last
}

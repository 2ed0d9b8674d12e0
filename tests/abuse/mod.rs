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
pub fn scale(ci: usize, full: usize) -> usize {
    if std::env::var_os("ABUSE_FULL").is_some() {
        full
    } else {
        ci
    }
}

/// A real server with `args`, on a fresh database (kept as long as the server).
pub struct Server {
    pub server: BinaryServer,
    _dir: tempfile::TempDir,
}

impl Server {
    pub fn start(args: &[&str]) -> Self {
        Self::start_with(args, &[], &[])
    }

    pub fn start_with(args: &[&str], env: &[(&str, &str)], prefix: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let server = BinaryServer::launch(&dir.path().join("gpulab.db"), args, env, prefix);
        Self { server, _dir: dir }
    }

    pub fn base(&self) -> &str {
        &self.server.base
    }

    pub fn database(&self) -> std::path::PathBuf {
        self._dir.path().join("gpulab.db")
    }
}

/// A client from `address`, keeping no connection between requests when `fresh`.
pub fn client_from(address: &str, cookie: Option<&str>) -> reqwest::Client {
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

/// The 99th percentile of `n` `/healthz` round trips, each on a new connection.
pub async fn healthz_p99(base: &str, n: usize) -> Duration {
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
    times[(n * 99).div_ceil(100).saturating_sub(1).min(n - 1)]
}

/// The value of an unlabelled metric (or one with exactly `labels`) in `/metrics`.
pub async fn metric(base: &str, name_and_labels: &str) -> Option<f64> {
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

/// The server's resident memory once two readings half a second apart differ by less
/// than 256 KiB (at most 20 s of waiting).
pub async fn settled_resident_bytes(server: &crate::support::BinaryServer) -> u64 {
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

//! Findings 1 and 2: invented HTTP methods must not grow the metrics (and the server's
//! memory) without bound, and half-sent requests (slowloris) must not hold the
//! connections a real student needs.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use super::{Latencies, Server, scale};

/// Sends `count` requests, each with its own invented 8 KiB method (numbered from
/// `first`), over fresh connections.
async fn send_invented_methods(address: &str, first: usize, count: usize) {
    let address = address.to_string();
    tokio::task::spawn_blocking(move || {
        for i in first..first + count {
            let method: String = (0..8192)
                .map(|j| char::from(b'A' + ((i * 7 + j) % 26) as u8))
                .collect();
            let Ok(mut stream) = TcpStream::connect(&address) else {
                continue;
            };
            let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
            let _ = write!(
                stream,
                "{method} /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            );
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stream, &mut sink);
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn invented_methods_share_one_metrics_label_and_memory_stays_flat() {
    let server = Server::start(&[]);
    let base = server.base().to_string();
    let address = base.trim_start_matches("http://").to_string();
    // Warm up: the first requests (a valid one and an invented method's error path)
    // allocate what the server keeps anyway, and the start-up thread that compresses
    // every page and asset must have finished: measure from a settled baseline.
    for _ in 0..50 {
        reqwest::get(format!("{base}/healthz")).await.unwrap();
    }
    send_invented_methods(&address, 0, 50).await;
    let before = super::settled_resident_bytes(&server.server).await;
    let requests = scale(300, 3000);
    send_invented_methods(&address, 50, requests).await;
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let grew = server.server.resident_bytes().saturating_sub(before);
    assert!(
        grew < 10 << 20,
        "resident memory grew by {} MiB over {requests} invented methods",
        grew >> 20
    );
    assert!(
        metrics.len() < 100_000,
        "/metrics is {} bytes after {requests} invented methods",
        metrics.len()
    );
    assert!(
        !metrics.contains("AAAA") && !metrics.contains("BCDE"),
        "a method name became a label"
    );
}

#[tokio::test]
async fn half_sent_requests_do_not_lock_out_a_real_student() {
    // A server allowed 256 open files: before the fix, slow clients took every one.
    let server = Server::start_with(
        &["--header-timeout-secs", "15"],
        &[],
        &["prlimit", "--nofile=256:256"],
    );
    let base = server.base().to_string();
    let address = base.trim_start_matches("http://").to_string();
    let slow = scale(300, 1000);
    let holders = tokio::task::spawn_blocking(move || {
        let mut open = Vec::new();
        for _ in 0..slow {
            if let Ok(mut stream) = TcpStream::connect(&address) {
                let _ = stream.write_all(b"GET /lessons/why-gpus HTTP/1.1\r\nHost: x\r\nX-Slow: ");
                open.push(stream);
            }
        }
        open
    })
    .await
    .unwrap();
    assert!(
        holders.len() >= 250,
        "opened {} slow connections",
        holders.len()
    );
    // Locked out, a student's requests fail or wait for a slow client's timeout (15 s).
    let times = Latencies::of_healthz(&base, scale(50, 200)).await;
    assert!(
        times.slowest() < Duration::from_secs(5) && times.quantile(0.9) < Duration::from_millis(50),
        "/healthz with {} half-sent requests open: p90 {:?}, slowest {:?}",
        holders.len(),
        times.quantile(0.9),
        times.slowest()
    );
    // The slow connections are closed by the header timeout, not kept for ever.
    drop(holders);
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_header_timeout() {
    let server = Server::start(&["--header-timeout-secs", "1"]);
    let address = server.base().trim_start_matches("http://").to_string();
    let closed = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(&address).unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let started = std::time::Instant::now();
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stream, &mut sink);
        started.elapsed()
    })
    .await
    .unwrap();
    assert!(closed < Duration::from_secs(5), "closed after {closed:?}");
}

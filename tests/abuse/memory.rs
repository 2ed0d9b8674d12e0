//! Findings 4 and 5: the allocator playground must not let clients without cookies, or
//! one machine with many cookies, take the host's memory, must not create a playground
//! on a read, and must not stall the server while it allocates.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use super::{Latencies, Server, client_from, metric, scale};
use crate::support::student_id;

const MIB: u64 = 1 << 20;

async fn allocate(client: &reqwest::Client, base: &str, mib: u64) -> StatusCode {
    client
        .post(format!("{base}/api/playground/tensors"))
        .json(&json!({"name": "big", "mib": mib}))
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn cookieless_and_many_cookie_allocations_leave_memory_for_the_class() {
    let server = Server::start(&[
        "--playground-mib-per-student",
        "64",
        "--playground-mib-total",
        "512",
        "--playground-mib-per-address",
        "256",
    ]);
    let base = server.base().to_string();
    // The start-up precompression of every page grows the process for its first
    // second or more: measure from a settled baseline.
    let before = super::settled_resident_bytes(&server.server).await;
    // Eight clients without cookies: refused, nothing allocated.
    let cookieless = client_from("127.0.0.1", None);
    for _ in 0..8 {
        assert_eq!(
            allocate(&cookieless, &base, 64).await,
            StatusCode::FORBIDDEN
        );
    }
    assert!(server.server.resident_bytes() < before + 16 * MIB);
    // One machine inventing twelve students: only its address's share (256 MiB) is
    // granted; the server's memory stays bounded by it.
    let mut granted = 0;
    for _ in 0..12 {
        let fake = client_from("127.0.0.1", Some(&student_id()));
        if allocate(&fake, &base, 64).await == StatusCode::OK {
            granted += 1;
        }
    }
    assert_eq!(granted, 4, "256 MiB per address / 64 MiB each");
    let grown = server.server.resident_bytes().saturating_sub(before);
    assert!(
        grown < 300 * MIB,
        "resident memory grew by {} MiB",
        grown >> 20
    );
    // A student on another machine still gets memory.
    let me = client_from("127.0.0.2", Some(&student_id()));
    assert_eq!(allocate(&me, &base, 64).await, StatusCode::OK);
}

#[tokio::test]
async fn reading_the_playground_creates_none() {
    let server = Server::start(&[]);
    let base = server.base();
    let reader = client_from("127.0.0.1", None);
    for _ in 0..scale(2_000, 20_000) {
        let view = reader
            .get(format!("{base}/api/playground"))
            .send()
            .await
            .unwrap();
        assert_eq!(view.status(), StatusCode::OK);
    }
    assert_eq!(metric(base, "gpulab_playgrounds").await, Some(0.0));
}

#[tokio::test]
async fn allocating_does_not_stall_other_requests() {
    let server = Server::start(&["--playground-mib-per-student", "256"]);
    let base = server.base().to_string();
    let churn_for = Duration::from_secs(scale(6, 30) as u64);
    let until = Instant::now() + churn_for;
    let mut churners = Vec::new();
    for i in 0..4 {
        let base = base.clone();
        churners.push(tokio::spawn(async move {
            let me = client_from(&format!("127.0.0.{}", i + 3), Some(&student_id()));
            let mut rounds = 0;
            while Instant::now() < until {
                allocate(&me, &base, 256).await;
                let _ = me
                    .delete(format!("{base}/api/playground/tensors/big"))
                    .send()
                    .await;
                let _ = me
                    .post(format!("{base}/api/playground/empty-cache"))
                    .send()
                    .await;
                rounds += 1;
            }
            rounds
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A scheduling hiccup of this 2-core box (4 threads filling 256 MiB each) slows a
    // request or two; filling on the async workers would slow most of them.
    let times = Latencies::of_healthz(&base, scale(300, 400)).await;
    let rounds: usize = futures_sum(churners).await;
    assert!(rounds >= 4, "the churn ran ({rounds} rounds)");
    let slow = times.share_over(Duration::from_millis(50));
    assert!(
        slow < 0.1 && times.slowest() < Duration::from_secs(5),
        "/healthz during playground churn: {:.0}% over 50 ms (median {:?}, slowest {:?})",
        slow * 100.0,
        times.quantile(0.5),
        times.slowest()
    );
}

async fn futures_sum(tasks: Vec<tokio::task::JoinHandle<usize>>) -> usize {
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    total
}

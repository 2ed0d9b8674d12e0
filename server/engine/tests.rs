//! The engine's shutdown contract: once [`Engine::close`] returns, every job a
//! submission accepted has been failed with the "shutting down" message, and every
//! later submission is refused, however the two interleave.

use super::*;
use crate::experiments::REGISTRY;

fn timing_job() -> Job {
    let timing = REGISTRY.iter().find(|e| e.name() == "timing").unwrap();
    timing.prepare(None, &Limits::default()).unwrap()
}

#[test]
fn a_submission_racing_close_is_refused_or_failed_never_left_waiting() {
    for (name, db, _scratch) in crate::db::testing::backends() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let limits = Limits {
                queue_length: 1_000_000,
                pending_per_student: 1_000_000,
                experiments_per_minute: 0,
                ..Limits::default()
            };
            // No worker here, so nothing claims a job (what close leaves queued stays
            // queued) and nothing calibrates; close fails the waiting jobs as `serve` does.
            let mut engine = Engine::web(limits, db);
            Arc::get_mut(&mut engine.local)
                .expect("no clone of the engine yet")
                .runs_workers = true;
            // Eight students submit back to back until refused; close lands mid-stream.
            let students: Vec<_> = (0..8)
                .map(|i| {
                    let engine = engine.clone();
                    tokio::spawn(async move {
                        let mut accepted = Vec::new();
                        loop {
                            match engine.submit(&format!("student-{i}"), None, timing_job()).await {
                                Ok((id, _)) => accepted.push(id),
                                Err(Refused::Closed) => return accepted,
                                Err(other) => panic!("an unexpected refusal: {other:?}"),
                            }
                        }
                    })
                })
                .collect();
            tokio::time::sleep(Duration::from_millis(30)).await;
            engine.close().await;
            let mut accepted = Vec::new();
            for student in students {
                accepted.extend(student.await.unwrap());
            }
            assert!(!accepted.is_empty(), "{name}: no submission got in before close");
            for id in &accepted {
                let state = engine.job(*id, None).await.unwrap();
                assert!(
                    matches!(&state, Some(JobState::Failed { error }) if error.contains("shutting down")),
                    "{name}: job {id} was accepted, but after close it is {state:?} ({} accepted)",
                    accepted.len()
                );
            }
            let late = engine.submit("late", None, timing_job()).await;
            assert!(matches!(late, Err(Refused::Closed)), "{name}: {late:?}");
            eprintln!("{name}: {} accepted, all failed by close", accepted.len());
        });
    }
}

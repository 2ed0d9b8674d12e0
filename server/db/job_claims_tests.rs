//! A class round's job, on SQLite and on a real PostgreSQL server: the worker that
//! completes it reveals the round in the completing transaction, with its own device
//! and every prediction scored; a failed run fails the round; and a job reaped twice
//! fails its round, so no round waits for a web node that is gone.

use std::time::Duration;

use super::{Claimed, FinishedRun, MeasuredValue, claim, complete, reap};
use crate::config::Limits;
use crate::db::jobs::{self, NewJob};
use crate::db::testing::backends;
use crate::db::{Db, rounds};

/// Opens a round with ann's prediction and queues its job, as `Engine::submit_round`
/// does; the round's id.
fn queued_round(db: &Db) -> i64 {
    let limits = Limits {
        experiments_per_minute: 0,
        ..Limits::default()
    };
    db.run_blocking(|tx| {
        let round = rounds::open(tx, "timing", "timing.underestimate_factor", "×", "{}")?;
        rounds::predict(tx, round, "ann", 2.0)?;
        let job = NewJob {
            experiment: "timing",
            params: "{}".into(),
            prediction: None,
            round: Some(round),
        };
        let queued = jobs::submit(tx, "instructor-round", None, &job, &limits)?;
        assert!(queued.is_ok(), "{queued:?}");
        rounds::set_status(tx, round, "running", None)?;
        Ok(round)
    })
    .unwrap()
}

fn finished(result: Result<serde_json::Value, String>) -> FinishedRun {
    FinishedRun {
        result,
        measured: Some(MeasuredValue {
            quantity: "timing.underestimate_factor".into(),
            unit: "x".into(),
            value: 3.0,
        }),
        lab: None,
        backend: "cuda".into(),
        device: "the worker's GPU".into(),
        ran_for: Duration::ZERO,
    }
}

fn claimed(db: &Db, worker: &str, lease: Duration) -> Claimed {
    db.run_blocking(|tx| claim(tx, worker, lease))
        .unwrap()
        .expect("the round's job is waiting")
}

#[test]
fn the_worker_completing_a_rounds_job_reveals_the_round_with_its_device() {
    for (engine, db, _scratch) in backends() {
        let round = queued_round(&db);
        let job = claimed(&db, "w1", Duration::from_secs(30));
        assert_eq!(job.round, Some(round), "{engine}: the job names its round");
        let run = finished(Ok(serde_json::json!({"ok": true})));
        assert!(
            db.run_blocking(|tx| complete(tx, &job, "w1", &run))
                .unwrap()
        );
        let now = db.run_blocking(rounds::current).unwrap().unwrap();
        assert_eq!(
            (now.status.as_str(), now.measured),
            ("revealed", Some(3.0)),
            "{engine}"
        );
        let ann = db
            .run_blocking(|tx| crate::db::predictions::for_student(tx, "ann"))
            .unwrap();
        assert_eq!(ann.len(), 1, "{engine}");
        assert_eq!(
            (
                ann[0].row.predicted,
                ann[0].row.measured,
                ann[0].row.backend.as_str(),
                ann[0].row.device.as_str()
            ),
            (2.0, 3.0, "cuda", "the worker's GPU"),
            "{engine}: scored against the worker's measurement, on its device"
        );
    }
}

#[test]
fn a_failed_run_and_a_job_reaped_twice_fail_their_round() {
    for (engine, db, _scratch) in backends() {
        let round = queued_round(&db);
        let job = claimed(&db, "w1", Duration::from_secs(30));
        let run = finished(Err("out of memory".into()));
        assert!(
            db.run_blocking(|tx| complete(tx, &job, "w1", &run))
                .unwrap()
        );
        let now = db.run_blocking(rounds::current).unwrap().unwrap();
        assert_eq!(
            (now.id, now.status.as_str(), now.error.as_deref()),
            (round, "failed", Some("out of memory")),
            "{engine}"
        );

        let round = queued_round(&db);
        let short = Duration::from_millis(200);
        for worker in ["w1", "w2"] {
            claimed(&db, worker, short);
            std::thread::sleep(Duration::from_millis(350));
            assert_eq!(db.run_blocking(reap).unwrap(), 1, "{engine}");
        }
        let now = db.run_blocking(rounds::current).unwrap().unwrap();
        assert_eq!((now.id, now.status.as_str()), (round, "failed"), "{engine}");
        assert!(
            now.error
                .as_deref()
                .is_some_and(|e| e.contains("stopped twice")),
            "{engine}: the job's own reason: {:?}",
            now.error
        );
    }
}

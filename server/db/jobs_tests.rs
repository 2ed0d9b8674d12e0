//! The experiment queue on SQLite (always) and on a real PostgreSQL server (with
//! `GPULAB_TEST_POSTGRES`): the caps hold class-wide, the order is round-robin,
//! jobs in one turn keep their arrival order, concurrent
//! claims never share a job, an expired lease puts a job back once, then
//! fails it, while the worker that lost it can neither renew nor complete it, and a
//! completion records the result, the run history and the prediction together.

use std::collections::HashSet;
use std::time::Duration;

use super::{JobState, NewJob, Refused};
use crate::config::Limits;
use crate::db::Db;
use crate::db::job_claims::{Claimed, FinishedRun, MeasuredValue, claim, complete, reap, renew};
use crate::db::testing::backends;

fn submit(
    db: &Db,
    owner: &str,
    address: Option<&str>,
    limits: &Limits,
) -> Result<(u64, usize), Refused> {
    let address = address.map(|a| a.parse().unwrap());
    let job = NewJob {
        experiment: "timing",
        params: "{}".into(),
        prediction: Some(2.0),
        round: None,
    };
    db.run_blocking(|tx| super::submit(tx, owner, address, &job, limits))
        .unwrap()
}

fn done(db: &Db, id: u64, worker: &str) -> bool {
    db.run_blocking(|tx| {
        let job = tx.query_row("SELECT owner FROM jobs WHERE id = ?1", crate::params![id])?;
        let owner: String = job.get(0)?;
        let claimed = Claimed {
            id,
            owner,
            experiment: "timing".into(),
            params: "{}".into(),
            prediction: Some(2.0),
            round: None,
        };
        let run = FinishedRun {
            result: Ok(serde_json::json!({"ok": true})),
            measured: Some(MeasuredValue {
                quantity: "timing.underestimate_factor".into(),
                unit: "×".into(),
                value: 3.0,
            }),
            lab: None,
            backend: "cpu".into(),
            device: "test CPU".into(),
            ran_for: Duration::ZERO,
        };
        complete(tx, &claimed, worker, &run)
    })
    .unwrap()
}

#[test]
fn caps_hold_for_the_whole_class_and_say_which() {
    for (engine, db, _scratch) in backends() {
        eprintln!("{engine}");
        let limits = Limits {
            pending_per_student: 2,
            pending_per_address: 3,
            queue_length: 5,
            experiments_per_minute: 0,
            ..Limits::default()
        };
        // Zed's job waits, so the per-student caps protect someone and bind
        // (`fair_share`: alone, Ann would not be limited).
        assert!(submit(&db, "zed", None, &limits).is_ok());
        assert!(submit(&db, "ann", None, &limits).is_ok());
        assert_eq!(submit(&db, "ann", None, &limits).unwrap().1, 3);
        assert_eq!(
            submit(&db, "ann", None, &limits),
            Err(Refused::TooManyPending { limit: 2 })
        );
        for who in ["bob", "cy", "dee"] {
            let outcome = submit(&db, who, Some("10.0.0.7"), &limits);
            if who == "dee" {
                assert_eq!(
                    outcome,
                    Err(Refused::Full {
                        retry_after_secs: 1
                    }),
                    "the sixth waiting job"
                );
            } else {
                assert!(outcome.is_ok(), "{who}: {outcome:?}");
            }
        }
        assert_eq!(
            db.run_blocking(super::depth).unwrap(),
            5,
            "{engine}: the refused job is not waiting"
        );
        let strict = Limits {
            queue_length: 100,
            pending_per_address: 2,
            ..limits.clone()
        };
        assert_eq!(
            submit(&db, "eve", Some("10.0.0.7"), &strict),
            Err(Refused::AddressBusy { limit: 2 })
        );
        let per_minute = Limits {
            queue_length: 100,
            pending_per_student: 100,
            experiments_per_minute: 3,
            ..limits
        };
        assert_eq!(
            submit(&db, "ann", None, &per_minute).err(),
            None,
            "ann's third in the minute"
        );
        assert_eq!(
            submit(&db, "ann", None, &per_minute),
            Err(Refused::RateLimited { limit: 3 })
        );
    }
}

#[test]
fn jobs_in_one_turn_keep_the_order_they_came_in_even_within_a_clock_tick() {
    // Forty first jobs from forty students, submitted back to back: many land in the
    // same millisecond of SQLite's clock, and each must still queue behind the ones
    // before it, and be claimed in that order.
    for (engine, db, _scratch) in backends() {
        let limits = Limits {
            experiments_per_minute: 0,
            queue_length: 100,
            ..Limits::default()
        };
        let mut ids = Vec::new();
        for n in 1..=40 {
            let (id, position) = submit(&db, &format!("student-{n}"), None, &limits).unwrap();
            assert_eq!(position, n, "{engine}: job {n}'s place");
            ids.push(id);
        }
        for (n, id) in ids.iter().enumerate() {
            let claimed = db
                .run_blocking(|tx| claim(tx, "w", Duration::from_secs(60)))
                .unwrap()
                .unwrap();
            assert_eq!(claimed.id, *id, "{engine}: claim {n}");
        }
    }
}

#[test]
fn students_take_turns_and_only_the_owner_sees_a_job() {
    for (engine, db, _scratch) in backends() {
        eprintln!("{engine}");
        let limits = Limits {
            experiments_per_minute: 0,
            pending_per_student: 3,
            ..Limits::default()
        };
        let a1 = submit(&db, "ann", None, &limits).unwrap();
        let a2 = submit(&db, "ann", None, &limits).unwrap();
        let a3 = submit(&db, "ann", None, &limits).unwrap();
        let b1 = submit(&db, "bob", None, &limits).unwrap();
        assert_eq!(
            (a1.1, a2.1, a3.1, b1.1),
            (1, 2, 3, 2),
            "bob's first goes before ann's second"
        );
        let state = |id, owner| db.run_blocking(|tx| super::state(tx, id, owner)).unwrap();
        assert_eq!(
            state(a3.0, Some("ann")),
            Some(JobState::Queued { position: 4 })
        );
        assert_eq!(
            state(a3.0, Some("bob")),
            None,
            "another student's job does not exist for them"
        );
        let order: Vec<u64> = std::iter::from_fn(|| {
            db.run_blocking(|tx| claim(tx, "w1", Duration::from_secs(30)))
                .unwrap()
                .map(|c| c.id)
        })
        .collect();
        assert_eq!(order, vec![a1.0, b1.0, a2.0, a3.0]);
        assert_eq!(state(b1.0, None), Some(JobState::Running));
        assert!(done(&db, b1.0, "w1"));
        assert!(matches!(
            state(b1.0, Some("bob")),
            Some(JobState::Done { .. })
        ));
        let history: i64 = db
            .run_blocking(|tx| {
                tx.query_row(
                    "SELECT COUNT(*) FROM experiment_runs WHERE student_id = 'bob'",
                    &[],
                )?
                .get(0)
            })
            .unwrap();
        assert_eq!(history, 1, "the run history is written with the result");
        let (predicted, measured): (f64, f64) = db
            .run_blocking(|tx| {
                let row = tx.query_row(
                    "SELECT predicted, measured FROM predictions WHERE student_id = 'bob'",
                    &[],
                )?;
                Ok((row.get(0)?, row.get(1)?))
            })
            .unwrap();
        assert_eq!(
            (predicted, measured),
            (2.0, 3.0),
            "and the scored prediction"
        );
    }
}

#[test]
fn concurrent_workers_never_claim_the_same_job() {
    for (engine, db, _scratch) in backends() {
        eprintln!("{engine}");
        let limits = Limits {
            experiments_per_minute: 0,
            pending_per_student: 1000,
            queue_length: 1000,
            ..Limits::default()
        };
        let submitted: HashSet<u64> = (0..60)
            .map(|i| {
                submit(&db, &format!("s{}", i % 7), None, &limits)
                    .unwrap()
                    .0
            })
            .collect();
        let claimers: Vec<_> = (0..3)
            .map(|w| {
                let db = db.clone();
                std::thread::spawn(move || {
                    let name = format!("w{w}");
                    let mut mine = Vec::new();
                    while let Some(job) = db
                        .run_blocking(|tx| claim(tx, &name, Duration::from_secs(30)))
                        .unwrap()
                    {
                        mine.push(job.id);
                    }
                    mine
                })
            })
            .collect();
        let claimed: Vec<u64> = claimers
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        let unique: HashSet<u64> = claimed.iter().copied().collect();
        assert_eq!(claimed.len(), unique.len(), "a job was claimed twice");
        assert_eq!(unique, submitted, "every job was claimed");
    }
}

#[test]
fn an_expired_lease_puts_the_job_back_once_then_fails_it_and_fences_the_old_worker() {
    for (engine, db, _scratch) in backends() {
        eprintln!("{engine}");
        let limits = Limits {
            experiments_per_minute: 0,
            ..Limits::default()
        };
        let (id, _) = submit(&db, "ann", None, &limits).unwrap();
        let short = Duration::from_millis(200);
        let first = db
            .run_blocking(|tx| claim(tx, "w1", short))
            .unwrap()
            .unwrap();
        assert_eq!(first.id, id);
        assert_eq!(
            db.run_blocking(reap).unwrap(),
            0,
            "a live lease is left alone"
        );
        std::thread::sleep(Duration::from_millis(350));
        assert_eq!(db.run_blocking(reap).unwrap(), 1);
        assert!(
            !db.run_blocking(|tx| renew(tx, id, "w1", short)).unwrap(),
            "w1 lost it"
        );
        let second = db
            .run_blocking(|tx| claim(tx, "w2", short))
            .unwrap()
            .unwrap();
        assert_eq!(second.id, id, "retried on another worker");
        assert!(
            !done(&db, id, "w1"),
            "the worker that lost the lease cannot store a result"
        );
        std::thread::sleep(Duration::from_millis(350));
        assert_eq!(db.run_blocking(reap).unwrap(), 1);
        let state = db
            .run_blocking(|tx| super::state(tx, id, Some("ann")))
            .unwrap();
        assert!(
            matches!(&state, Some(JobState::Failed { error }) if error.contains("stopped twice")),
            "{state:?}"
        );
        assert!(
            db.run_blocking(|tx| claim(tx, "w3", short))
                .unwrap()
                .is_none(),
            "not run a third time"
        );
    }
}

//! The shared queue against a real PostgreSQL server (`GPULAB_TEST_POSTGRES`): the caps
//! hold class-wide, the order is round-robin, concurrent claims never share a job, and
//! an expired lease puts a job back once, then fails it, while the worker that lost it
//! can neither renew nor complete it.

use std::collections::HashSet;
use std::time::Duration;

use crate::config::Limits;
use crate::db::Db;
use crate::db::testing::{self, Scratch};
use crate::engine::RunReport;
use crate::engine::queue::{JobState, Refused};
use crate::engine::shared_queue::{self, NewJob};
use crate::engine::shared_worker::{self, claim, complete, reap, renew};

fn postgres() -> Option<(Db, Scratch)> {
    let Some(server) = testing::postgres_server() else {
        assert!(
            std::env::var(testing::REQUIRE_ENV).as_deref() != Ok("1"),
            "the shared queue's tests need {}",
            testing::POSTGRES_ENV
        );
        eprintln!(
            "SKIPPED: the shared queue's tests need {}",
            testing::POSTGRES_ENV
        );
        return None;
    };
    let (_, db, scratch) = testing::postgres(&server);
    Some((db, scratch))
}

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
        prediction: None,
    };
    db.run_blocking(|tx| shared_queue::submit(tx, owner, address, &job, limits))
        .unwrap()
}

fn done(db: &Db, id: u64, worker: &str) -> bool {
    let card = crate::gpu::card::cpu_card("test");
    let state = JobState::Done {
        result: serde_json::json!({"ok": true}),
    };
    db.run_blocking(|tx| {
        let job = tx.query_row("SELECT owner FROM jobs WHERE id = ?1", crate::params![id])?;
        let owner: String = job.get(0)?;
        let claimed = shared_worker::Claimed {
            id,
            owner: owner.clone(),
            experiment: "timing".into(),
            params: "{}".into(),
            prediction: None,
        };
        let report = RunReport::new(
            &owner,
            "timing".into(),
            "{}".into(),
            &card,
            Duration::ZERO,
            &state,
        );
        complete(tx, &claimed, worker, &state, report)
    })
    .unwrap()
}

#[test]
fn caps_hold_for_the_whole_class_and_say_which() {
    let Some((db, _scratch)) = postgres() else {
        return;
    };
    let limits = Limits {
        pending_per_student: 2,
        pending_per_address: 3,
        queue_length: 4,
        experiments_per_minute: 0,
        ..Limits::default()
    };
    assert!(submit(&db, "ann", None, &limits).is_ok());
    assert_eq!(submit(&db, "ann", None, &limits).unwrap().1, 2);
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
                "the fifth waiting job"
            );
        } else {
            assert!(outcome.is_ok(), "{who}: {outcome:?}");
        }
    }
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

#[test]
fn students_take_turns_and_only_the_owner_sees_a_job() {
    let Some((db, _scratch)) = postgres() else {
        return;
    };
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
    let state = |id, owner| {
        db.run_blocking(|tx| shared_queue::state(tx, id, owner))
            .unwrap()
    };
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
}

#[test]
fn concurrent_workers_never_claim_the_same_job() {
    let Some((db, _scratch)) = postgres() else {
        return;
    };
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

#[test]
fn an_expired_lease_puts_the_job_back_once_then_fails_it_and_fences_the_old_worker() {
    let Some((db, _scratch)) = postgres() else {
        return;
    };
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
        .run_blocking(|tx| shared_queue::state(tx, id, Some("ann")))
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

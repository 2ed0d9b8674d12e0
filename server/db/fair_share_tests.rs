//! The per-student caps are work-conserving, on SQLite and on a real PostgreSQL server
//! (with `GPULAB_TEST_POSTGRES`): alone, a student's jobs all queue; once another
//! student waits, the caps bind as before; and what a lone student queued beyond their
//! share never locks the next student out of a full queue.

use crate::config::Limits;
use crate::db::Db;
use crate::db::jobs::{self, NewJob, Refused};
use crate::db::testing::backends;

/// Queues a timing job for `owner` (from `address`, if any): its position, or why not.
fn queue(db: &Db, owner: &str, address: Option<&str>, limits: &Limits) -> Result<usize, Refused> {
    let address = address.map(|a| a.parse().unwrap());
    let job = NewJob {
        experiment: "timing",
        params: "{}".into(),
        prediction: None,
        round: None,
    };
    db.run_blocking(|tx| jobs::submit(tx, owner, address, &job, limits))
        .unwrap()
        .map(|(_, position)| position)
}

fn others_waiting(db: &Db, owner: &str) -> bool {
    db.run_blocking(|tx| super::others_waiting(tx, owner))
        .unwrap()
}

#[test]
fn alone_every_job_queues_and_a_second_student_brings_the_caps_back() {
    for (engine, db, _scratch) in backends() {
        let limits = Limits {
            queue_length: 100,
            ..Limits::default()
        };
        assert_eq!(
            (limits.experiments_per_minute, limits.pending_per_student),
            (12, 2),
            "the defaults this test is about"
        );
        assert!(!others_waiting(&db, "ann"), "{engine}: an empty queue");
        for n in 1..=18 {
            assert_eq!(
                queue(&db, "ann", Some("10.0.0.1"), &limits),
                Ok(n),
                "{engine}: Ann alone, her experiment {n} of the minute"
            );
        }
        assert!(!others_waiting(&db, "ann"), "{engine}: only Ann waits");
        assert!(others_waiting(&db, "bob"), "{engine}: Ann waits, for Bob");
        // Bob joins the earliest waiting turn: second in line, behind Ann's first.
        assert_eq!(queue(&db, "bob", None, &limits), Ok(2), "{engine}");
        assert!(others_waiting(&db, "ann"), "{engine}");
        assert_eq!(
            queue(&db, "ann", None, &limits),
            Err(Refused::RateLimited { limit: 12 }),
            "{engine}: with Bob waiting, Ann's 19th in the minute"
        );
        let no_rate = Limits {
            experiments_per_minute: 0,
            ..limits.clone()
        };
        assert_eq!(
            queue(&db, "ann", None, &no_rate),
            Err(Refused::TooManyPending { limit: 2 }),
            "{engine}"
        );
        let per_address = Limits {
            pending_per_student: 100,
            pending_per_address: 8,
            ..no_rate
        };
        assert_eq!(
            queue(&db, "ann", Some("10.0.0.1"), &per_address),
            Err(Refused::AddressBusy { limit: 8 }),
            "{engine}"
        );
        assert_eq!(
            queue(&db, "bob", None, &limits).map(|_| ()),
            Ok(()),
            "{engine}: Bob is within his share"
        );
    }
}

#[test]
fn a_full_queue_a_lone_student_filled_still_takes_the_next_student() {
    for (engine, db, _scratch) in backends() {
        let limits = Limits {
            queue_length: 4,
            pending_per_student: 2,
            ..Limits::default()
        };
        for n in 1..=4 {
            assert_eq!(queue(&db, "ann", None, &limits), Ok(n), "{engine}");
        }
        assert!(
            matches!(queue(&db, "ann", None, &limits), Err(Refused::Full { .. })),
            "{engine}: alone, the queue's length still bounds Ann"
        );
        // Two of Ann's four are beyond her share: Bob and Cy, within theirs, pass them.
        assert_eq!(queue(&db, "bob", None, &limits), Ok(2), "{engine}");
        assert_eq!(queue(&db, "cy", None, &limits), Ok(3), "{engine}");
        for who in ["dee", "bob"] {
            assert!(
                matches!(queue(&db, who, None, &limits), Err(Refused::Full { .. })),
                "{engine}: {who}: four waiting within their shares fill the queue"
            );
        }
        assert_eq!(
            queue(&db, "ann", None, &limits),
            Err(Refused::TooManyPending { limit: 2 }),
            "{engine}: others wait, so Ann's cap binds"
        );
        assert_eq!(db.run_blocking(jobs::depth).unwrap(), 6, "{engine}");
    }
}

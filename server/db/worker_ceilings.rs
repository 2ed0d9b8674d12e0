//! Each worker's measured ceilings (`experiments::ceilings`, as JSON) on its row of the
//! `workers` table ([`super::job_claims`]), on SQLite and PostgreSQL. A `gpulab worker`
//! measures them once at start, before it claims a job, and [`store`]s them; a web node,
//! which runs no experiment and so measures nothing, shows the [`live`] ones on its
//! device card. The figures stay on the row while the worker heartbeats (its
//! registration refreshes the card and the heartbeat, never this column) and go with
//! the row when it stops.

use super::clock::epoch_now as now;
use super::jobs::LIVE_SECS;
use super::{DbError, Tx};
use crate::params;

/// Registers worker `name` (with its `backend` and device card, as
/// [`super::job_claims::register`] does) and stores its ceilings (JSON).
pub fn store(
    tx: &mut Tx,
    name: &str,
    backend: &str,
    card_json: &str,
    ceilings_json: &str,
) -> Result<(), DbError> {
    let now = now(tx.dialect());
    tx.execute(
        &format!(
            "INSERT INTO workers (name, backend, device, seen_at, running, ceilings)
             VALUES (?1, ?2, ?3, {now}, ?4, ?5)
             ON CONFLICT (name) DO UPDATE SET backend = ?2, device = ?3, seen_at = {now}, ceilings = ?5"
        ),
        params![name, backend, card_json, false, ceilings_json],
    )?;
    Ok(())
}

/// The ceilings (JSON) of the most recently seen live worker that stored some.
pub fn live(tx: &mut Tx) -> Result<Option<String>, DbError> {
    let now = now(tx.dialect());
    tx.query_opt(
        &format!(
            "SELECT ceilings FROM workers WHERE ceilings IS NOT NULL AND seen_at > {now} - ?1
             ORDER BY seen_at DESC LIMIT 1"
        ),
        params![LIVE_SECS],
    )?
    .map(|r| r.get::<String>(0))
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::job_claims::{register, unregister};
    use crate::db::testing::backends;

    #[test]
    fn a_live_workers_ceilings_are_read_back_and_go_when_it_stops_or_goes_quiet() {
        for (engine, db, _scratch) in backends() {
            eprintln!("{engine}");
            assert_eq!(db.run_blocking(live).unwrap(), None, "no worker yet");
            db.run_blocking(|tx| register(tx, "plain", "cpu", "{}", false))
                .unwrap();
            assert_eq!(
                db.run_blocking(live).unwrap(),
                None,
                "a worker that stored none shows none"
            );
            db.run_blocking(|tx| store(tx, "w1", "cuda", "{\"n\":1}", "{\"figures\":[1]}"))
                .unwrap();
            // The heartbeat re-registers the worker: its ceilings stay.
            db.run_blocking(|tx| register(tx, "w1", "cuda", "{\"n\":1}", true))
                .unwrap();
            assert_eq!(
                db.run_blocking(live).unwrap().as_deref(),
                Some("{\"figures\":[1]}")
            );
            db.run_blocking(|tx| {
                tx.execute(
                    "UPDATE workers SET seen_at = seen_at - ?1 WHERE name = 'w1'",
                    params![LIVE_SECS * 2.0],
                )
            })
            .unwrap();
            assert_eq!(
                db.run_blocking(live).unwrap(),
                None,
                "a worker that stopped heartbeating is not live"
            );
            db.run_blocking(|tx| store(tx, "w2", "cuda", "{}", "{\"figures\":[2]}"))
                .unwrap();
            assert_eq!(
                db.run_blocking(live).unwrap().as_deref(),
                Some("{\"figures\":[2]}")
            );
            db.run_blocking(|tx| unregister(tx, "w2")).unwrap();
            assert_eq!(db.run_blocking(live).unwrap(), None, "gone with its row");
        }
    }
}

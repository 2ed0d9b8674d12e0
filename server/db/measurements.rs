//! The latest value this class's GPU measured of each quantity, per parameters: what
//! hardware-graded quiz questions are graded against and what the script doctor quotes.
//! Written by the worker that measured it, in the transaction that records the run
//! ([`super::job_claims::complete`]), so every web node of a class reads what any worker
//! measured; one row per (quantity, parameters), the newest.

use super::clock::epoch_now as now;
use super::{DbError, Tx};
use crate::params;

/// Records `value` of `quantity` measured with `params` (compact JSON) now.
pub fn record(tx: &mut Tx, quantity: &str, params: &str, value: f64) -> Result<(), DbError> {
    let now = now(tx.dialect());
    tx.execute(
        &format!(
            "INSERT INTO measurements (quantity, params, value, measured_at) VALUES (?1, ?2, ?3, {now})
             ON CONFLICT (quantity, params) DO UPDATE SET value = ?3, measured_at = {now}"
        ),
        params![quantity, params, value],
    )?;
    Ok(())
}

/// The value of `quantity` measured with `params`, if it was measured no longer than
/// `max_age_secs` ago (any age with `None`).
pub fn latest(
    tx: &mut Tx,
    quantity: &str,
    params: &str,
    max_age_secs: Option<f64>,
) -> Result<Option<f64>, DbError> {
    let now = now(tx.dialect());
    let row = tx.query_opt(
        &format!(
            "SELECT value, {now} - measured_at FROM measurements WHERE quantity = ?1 AND params = ?2"
        ),
        params![quantity, params],
    )?;
    let Some(row) = row else {
        return Ok(None);
    };
    let (value, age): (f64, f64) = (row.get(0)?, row.get(1)?);
    Ok(max_age_secs.is_none_or(|max| age <= max).then_some(value))
}

/// The newest value of `quantity` measured with any parameters.
pub fn newest(tx: &mut Tx, quantity: &str) -> Result<Option<f64>, DbError> {
    tx.query_opt(
        "SELECT value FROM measurements WHERE quantity = ?1 ORDER BY measured_at DESC LIMIT 1",
        params![quantity],
    )?
    .map(|row| row.get(0))
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::backends;

    #[test]
    fn the_newest_value_is_kept_per_quantity_and_parameters() {
        for (engine, db, _scratch) in backends() {
            let q = "timing.underestimate_factor";
            assert_eq!(
                db.run_blocking(|tx| newest(tx, q)).unwrap(),
                None,
                "{engine}"
            );
            db.run_blocking(|tx| record(tx, q, "{\"n\":1}", 3.0))
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5));
            db.run_blocking(|tx| record(tx, q, "{\"n\":2}", 7.5))
                .unwrap();
            db.run_blocking(|tx| record(tx, "streams.best_speedup", "{}", 1.9))
                .unwrap();
            assert_eq!(
                db.run_blocking(|tx| newest(tx, q)).unwrap(),
                Some(7.5),
                "{engine}"
            );
            db.run_blocking(|tx| record(tx, q, "{\"n\":1}", 4.0))
                .unwrap();
            let latest =
                |params: &str, age| db.run_blocking(|tx| latest(tx, q, params, age)).unwrap();
            assert_eq!(
                latest("{\"n\":1}", Some(60.0)),
                Some(4.0),
                "{engine}: replaced"
            );
            assert_eq!(latest("{\"n\":1}", Some(-1.0)), None, "{engine}: too old");
            assert_eq!(latest("{\"n\":3}", None), None, "{engine}");
        }
    }
}

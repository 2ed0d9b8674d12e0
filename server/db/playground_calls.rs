//! The allocator playground of a class served by separate GPU workers, in the database
//! (`playground::remote` is the rest): `playground_owners` says which worker
//! holds each student's playground (the live worker holding the fewest gets a
//! newcomer), and `playground_calls` carries each request from a web node to that
//! worker and its reply back. A new call is announced with `NOTIFY` on [`CHANNEL`].
//! PostgreSQL only: a class of separate workers shares PostgreSQL.

use super::clock::epoch_now as now;
use super::jobs::LIVE_SECS;
use super::{DbError, Tx};
use crate::params;

/// The channel playground calls are announced on.
pub const CHANNEL: &str = "gpulab_playground";

/// Calls unanswered for this long are deleted (seconds).
const FORGET_AFTER_SECS: f64 = 60.0;

/// A call waiting for a worker's answer.
#[derive(Debug, Clone)]
pub struct PendingCall {
    /// Its id.
    pub id: u64,
    /// The student whose playground it is for (empty: anyone's worker answers).
    pub student: String,
    /// The request, as JSON.
    pub request: String,
}

/// Finds (or assigns) `student`'s worker and queues `request` for it; the call's id and
/// the worker, or `None` when no worker is live.
pub fn place(tx: &mut Tx, student: &str, request: &str) -> Result<Option<(u64, String)>, DbError> {
    // One assignment at a time, so two web nodes never give a student two owners.
    tx.batch("SELECT pg_advisory_xact_lock(7264003)")?;
    let now = now(tx.dialect());
    let live = format!("seen_at > {now} - {LIVE_SECS}");
    let owner = tx.query_opt(
        &format!(
            "SELECT o.worker FROM playground_owners o JOIN workers w ON w.name = o.worker
             WHERE o.student = ?1 AND w.{live}"
        ),
        params![student],
    )?;
    let worker: String = match owner {
        Some(row) => row.get(0)?,
        None => {
            let least = tx.query_opt(
                &format!(
                    "SELECT w.name FROM workers w LEFT JOIN playground_owners o ON o.worker = w.name
                     WHERE w.{live} GROUP BY w.name ORDER BY COUNT(o.student), w.name LIMIT 1"
                ),
                params![],
            )?;
            let Some(row) = least else { return Ok(None) };
            let worker: String = row.get(0)?;
            if !student.is_empty() {
                tx.execute(
                    "INSERT INTO playground_owners (student, worker) VALUES (?1, ?2)
                     ON CONFLICT (student) DO UPDATE SET worker = ?2",
                    params![student, worker],
                )?;
            }
            worker
        }
    };
    let id = super::jobs::random_id();
    tx.execute(
        &format!(
            "INSERT INTO playground_calls (id, student, worker, request, created_at) VALUES (?1, ?2, ?3, ?4, {now})"
        ),
        params![id, student, worker, request],
    )?;
    tx.batch(&format!("NOTIFY {CHANNEL}"))?;
    Ok(Some((id, worker)))
}

/// Call `id`'s reply, if the worker answered (the call is then deleted).
pub fn take_reply(tx: &mut Tx, id: u64) -> Result<Option<String>, DbError> {
    let reply = tx
        .query_opt(
            "SELECT reply FROM playground_calls WHERE id = ?1 AND reply IS NOT NULL",
            params![id],
        )?
        .map(|row| row.get::<String>(0))
        .transpose()?;
    if reply.is_some() {
        forget(tx, id)?;
    }
    Ok(reply)
}

/// Deletes call `id` (its caller stopped waiting).
pub fn forget(tx: &mut Tx, id: u64) -> Result<(), DbError> {
    tx.execute("DELETE FROM playground_calls WHERE id = ?1", params![id])?;
    Ok(())
}

/// The calls waiting for `worker`, oldest first (at most 50); deletes calls nobody
/// answered within a minute.
pub fn pending(tx: &mut Tx, worker: &str) -> Result<Vec<PendingCall>, DbError> {
    let now = now(tx.dialect());
    tx.execute(
        &format!("DELETE FROM playground_calls WHERE created_at < {now} - ?1"),
        params![FORGET_AFTER_SECS],
    )?;
    tx.query(
        "SELECT id, student, request FROM playground_calls
         WHERE worker = ?1 AND reply IS NULL ORDER BY id LIMIT 50",
        params![worker],
    )?
    .iter()
    .map(|row| {
        Ok(PendingCall {
            id: row.get(0)?,
            student: row.get(1)?,
            request: row.get(2)?,
        })
    })
    .collect()
}

/// Stores the reply to call `id`.
pub fn answer(tx: &mut Tx, id: u64, reply: &str) -> Result<(), DbError> {
    tx.execute(
        "UPDATE playground_calls SET reply = ?2 WHERE id = ?1",
        params![id, reply],
    )?;
    Ok(())
}

//! The per-student caps are work-conserving, as fair-share schedulers are: they bind
//! only when they protect someone. A learner alone with the GPU — an empty queue, or
//! only their own experiments waiting — is never refused by the per-student rate, the
//! per-student or the per-address waiting caps; the moment another student's job is
//! waiting, those caps hold as they always did.
//!
//! The queue's length still bounds what waits. What a lone student queued beyond their
//! share (`pending_per_student`) is *borrowed*: a student within their share who
//! arrives at a full queue may pass it, so one learner who filled an idle queue never
//! locks the next one out (their jobs run first anyway: a newcomer joins the earliest
//! waiting turn). At most a queue's length of jobs is ever borrowed, so the queue never
//! holds more than twice its length.
//!
//! Used by the queue's `submit` inside its serialised transaction, and by the web
//! handler's per-node rate limiter, which asks [`others_waiting`] before it refuses.

use super::{DbError, Tx};
use crate::config::Limits;
use crate::params;

/// What the queue holds, as one submission sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// Jobs waiting, everyone's.
    pub all: usize,
    /// This student's jobs waiting.
    pub mine: u64,
    /// Other students' jobs waiting: the caps bind only when this is above 0.
    pub others: u64,
    /// Jobs waiting from this student's network address (`None`: no address known).
    pub from_address: Option<u64>,
    /// Experiments this student started in the last minute.
    pub last_minute: u64,
}

/// The cap that refuses a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// `experiments_per_minute`, with others waiting.
    PerMinute,
    /// `pending_per_student`, with others waiting.
    PendingPerStudent,
    /// `pending_per_address`, with others waiting.
    PendingPerAddress,
    /// `queue_length`, less what others borrowed when this student is within their share.
    QueueLength,
}

/// The cap that refuses this submission, or `None` when it may queue.
pub fn binding_cap(
    tx: &mut Tx,
    waiting: &Waiting,
    limits: &Limits,
) -> Result<Option<Cap>, DbError> {
    if waiting.others > 0 {
        let per_minute = u64::from(limits.experiments_per_minute);
        if per_minute > 0 && waiting.last_minute >= per_minute {
            return Ok(Some(Cap::PerMinute));
        }
        if waiting.mine >= limits.pending_per_student {
            return Ok(Some(Cap::PendingPerStudent));
        }
        if waiting
            .from_address
            .is_some_and(|n| n >= limits.pending_per_address)
        {
            return Ok(Some(Cap::PendingPerAddress));
        }
    }
    if waiting.all < limits.queue_length {
        return Ok(None);
    }
    let borrowed = if waiting.mine < limits.pending_per_student {
        borrowed(tx, limits.pending_per_student)?
    } else {
        0
    };
    Ok((waiting.all.saturating_sub(borrowed) >= limits.queue_length).then_some(Cap::QueueLength))
}

/// Jobs waiting beyond their owner's share of `share`, summed over the owners.
fn borrowed(tx: &mut Tx, share: u64) -> Result<usize, DbError> {
    tx.query_row(
        "SELECT CAST(COALESCE(SUM(n - ?1), 0) AS BIGINT) FROM
           (SELECT COUNT(*) AS n FROM jobs WHERE status = 'queued' GROUP BY owner) AS per_owner
         WHERE n > ?1",
        params![share],
    )?
    .get(0)
}

/// Whether any student but `owner` has a job waiting: whether a per-student cap would
/// protect anyone now.
pub fn others_waiting(tx: &mut Tx, owner: &str) -> Result<bool, DbError> {
    tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM jobs WHERE status = 'queued' AND owner <> ?1)",
        params![owner],
    )?
    .get(0)
}

#[cfg(test)]
#[path = "fair_share_tests.rs"]
mod tests;

//! The allocator playground on a class served by separate GPU workers (`serve --role
//! web` + `gpulab worker`). A playground holds real device memory, so it lives in one
//! worker process: each student's is **owned by one worker**, recorded in
//! `playground_owners` (the live worker holding the fewest playgrounds gets a newcomer).
//! A web node turns each playground request into a row of `playground_calls` for that
//! worker and sends `NOTIFY gpulab_playground`; the worker's playground thread answers in
//! the same row, and the web node that asked reads the answer. Because the owner is in
//! the database and the memory in the worker, a student whose requests reach another web
//! node finds the same playground. If the owner stops, the student's next request goes
//! to another live worker and starts an empty playground (as a restart would).

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::allocator::AllocConf;
use super::{Playgrounds, snapshot};
use crate::db::{Db, DbError, Tx};
use crate::engine::shared_queue::NOW;
use crate::engine::shared_worker::{LIVE_SECS, Listener};
use crate::params;

/// The channel playground calls are announced on.
pub const CHANNEL: &str = "gpulab_playground";
/// How long a web node waits for the worker's answer.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// One playground request.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Call {
    /// The playground as it stands.
    View,
    /// Allocate a named tensor of `bytes`.
    Allocate {
        /// Its name.
        name: String,
        /// Its size.
        bytes: u64,
        /// The student's address (for the per-address cap).
        address: Option<IpAddr>,
    },
    /// Free a tensor.
    Free {
        /// Its name.
        name: String,
    },
    /// `torch.cuda.empty_cache()`.
    EmptyCache,
    /// Drop everything.
    Reset,
    /// Start over with these allocator options (`PYTORCH_CUDA_ALLOC_CONF`).
    Configure {
        /// The options.
        conf: AllocConf,
    },
    /// The playground's state and history in `torch.cuda.memory._snapshot()`'s shape.
    Snapshot,
    /// The device's memory snapshot.
    Memory,
}

/// A worker's answer: the view (or snapshot), and the error of the change, if any.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reply {
    /// What failed (the playground is then unchanged), worded for the student.
    pub error: Option<String>,
    /// The playground view, or the memory snapshot.
    pub body: Value,
}

/// Why a call got no answer.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// No worker is serving the class.
    #[error(
        "no GPU worker is serving this class just now, so the playground is unavailable; try again in a minute"
    )]
    NoWorker,
    /// The owner did not answer in time.
    #[error("the GPU worker holding your playground ({0}) did not answer within 5 s; try again")]
    Timeout(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// Sends `call` for `student` to the worker that owns their playground and waits for
/// its answer.
pub async fn call(db: &Db, student: &str, call: Call) -> Result<Reply, RemoteError> {
    let (owner, request) = (
        student.to_string(),
        serde_json::to_string(&call).unwrap_or_default(),
    );
    let placed = db.run(move |tx| place(tx, &owner, &request)).await?;
    let Some((id, worker)) = placed else {
        return Err(RemoteError::NoWorker);
    };
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    while started.elapsed() < ANSWER_WITHIN {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(25));
        let answered = db
            .run(move |tx| {
                let reply = tx
                    .query_opt(
                        "SELECT reply FROM playground_calls WHERE id = ?1 AND reply IS NOT NULL",
                        params![id],
                    )?
                    .map(|row| row.get::<String>(0))
                    .transpose()?;
                if reply.is_some() {
                    tx.execute("DELETE FROM playground_calls WHERE id = ?1", params![id])?;
                }
                Ok(reply)
            })
            .await?;
        if let Some(text) = answered {
            return serde_json::from_str(&text).map_err(|e| {
                RemoteError::Db(DbError::Task(format!(
                    "a worker's answer did not parse: {e}"
                )))
            });
        }
    }
    let _ = db
        .run(move |tx| tx.execute("DELETE FROM playground_calls WHERE id = ?1", params![id]))
        .await;
    Err(RemoteError::Timeout(worker))
}

/// Finds (or assigns) the student's worker and queues the call; its id and the worker.
fn place(tx: &mut Tx, student: &str, request: &str) -> Result<Option<(u64, String)>, DbError> {
    // One assignment at a time, so two web nodes never give a student two owners.
    tx.batch("SELECT pg_advisory_xact_lock(7264003)")?;
    let live = format!("seen_at > {NOW} - {LIVE_SECS}");
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
            if student.is_empty() {
                // A memory snapshot for no one in particular: any worker answers.
                return queue_call(tx, student, &worker, request).map(Some);
            }
            tx.execute(
                "INSERT INTO playground_owners (student, worker) VALUES (?1, ?2)
                 ON CONFLICT (student) DO UPDATE SET worker = ?2",
                params![student, worker],
            )?;
            worker
        }
    };
    queue_call(tx, student, &worker, request).map(Some)
}

fn queue_call(
    tx: &mut Tx,
    student: &str,
    worker: &str,
    request: &str,
) -> Result<(u64, String), DbError> {
    let id = crate::engine::queue::random_id();
    tx.execute(
        &format!("INSERT INTO playground_calls (id, student, worker, request, created_at) VALUES (?1, ?2, ?3, ?4, {NOW})"),
        params![id, student, worker, request],
    )?;
    tx.batch(&format!("NOTIFY {CHANNEL}"))?;
    Ok((id, worker.to_string()))
}

/// A worker's playground thread: answers the calls addressed to `worker` until `stop`.
pub fn serve(db: &Db, worker: &str, playgrounds: &Playgrounds, stop: &AtomicBool) {
    let mut listener = Listener::new(CHANNEL);
    while !stop.load(Ordering::Relaxed) {
        let pending = db.run_blocking(|tx| {
            tx.execute(
                &format!("DELETE FROM playground_calls WHERE created_at < {NOW} - 60"),
                params![],
            )?;
            tx.query(
                "SELECT id, student, request FROM playground_calls
                 WHERE worker = ?1 AND reply IS NULL ORDER BY id LIMIT 50",
                params![worker],
            )
        });
        let rows = match pending {
            Ok(rows) => rows,
            Err(error) => {
                tracing::warn!(%error, "cannot read playground calls");
                std::thread::sleep(Duration::from_millis(500));
                continue;
            }
        };
        if rows.is_empty() {
            listener.wait(db, Duration::from_millis(250));
            continue;
        }
        for row in rows {
            let (Ok(id), Ok(student), Ok(request)) = (
                row.get::<u64>(0),
                row.get::<String>(1),
                row.get::<String>(2),
            ) else {
                continue;
            };
            let reply = match serde_json::from_str::<Call>(&request) {
                Ok(call) => answer(playgrounds, &student, call),
                Err(e) => Reply {
                    error: Some(format!("not a playground call: {e}")),
                    body: Value::Null,
                },
            };
            let text = serde_json::to_string(&reply).unwrap_or_default();
            if let Err(error) = db.run_blocking(|tx| {
                tx.execute(
                    "UPDATE playground_calls SET reply = ?2 WHERE id = ?1",
                    params![id, text],
                )
            }) {
                tracing::warn!(%error, "cannot answer a playground call");
            }
        }
    }
}

/// Runs one call on this worker's playgrounds.
pub fn answer(playgrounds: &Playgrounds, student: &str, call: Call) -> Reply {
    let json = |view| serde_json::to_value(view).unwrap_or_default();
    let changed = |outcome: Result<(), super::pool::PoolError>, view| Reply {
        error: outcome.err().map(|e| e.to_string()),
        body: json(view),
    };
    match call {
        Call::View => Reply {
            error: None,
            body: json(playgrounds.view_of(student)),
        },
        Call::Allocate {
            name,
            bytes,
            address,
        } => {
            let (outcome, view) = playgrounds.with(student, address, |pool, room| {
                pool.allocate(&name, bytes, room)
            });
            changed(outcome, view)
        }
        Call::Free { name } => {
            let (outcome, view) = playgrounds.with(student, None, |pool, _| pool.free(&name));
            changed(outcome, view)
        }
        Call::EmptyCache => {
            let ((), view) = playgrounds.with(student, None, |pool, _| pool.empty_cache());
            Reply {
                error: None,
                body: json(view),
            }
        }
        Call::Reset => Reply {
            error: None,
            body: json(playgrounds.reset(student)),
        },
        Call::Configure { conf } => {
            let ((), view) = playgrounds.with(student, None, |pool, _| pool.configure(conf));
            Reply {
                error: None,
                body: json(view),
            }
        }
        Call::Snapshot => Reply {
            error: None,
            body: playgrounds.snapshot_of(student),
        },
        Call::Memory => Reply {
            error: None,
            body: serde_json::to_value(snapshot(playgrounds.source())).unwrap_or_default(),
        },
    }
}

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
use crate::db::listener::Listener;
use crate::db::playground_calls::{self, CHANNEL, PendingCall};
use crate::db::{Db, DbError};

/// Where the allocator playgrounds' memory lives, decided once at start-up: in this
/// process (`gpulab serve`), or in the GPU workers of a class (`serve --role web`).
pub enum Home {
    /// This process holds them.
    Here(std::sync::Arc<Playgrounds>),
    /// The workers sharing this database hold them.
    Workers(Db),
}

impl Home {
    /// Runs `call` for `student` wherever their playground lives.
    pub async fn call(&self, student: &str, call: Call) -> Result<Reply, RemoteError> {
        match self {
            Self::Here(playgrounds) => {
                let (playgrounds, student) =
                    (std::sync::Arc::clone(playgrounds), student.to_string());
                // Driver and NVML calls can block: keep them off the async threads.
                tokio::task::spawn_blocking(move || answer(&playgrounds, &student, call))
                    .await
                    .map_err(|e| RemoteError::Db(DbError::Task(e.to_string())))
            }
            Self::Workers(db) => self::call(db, student, call).await,
        }
    }
}

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
    let placed = db
        .run(move |tx| playground_calls::place(tx, &owner, &request))
        .await?;
    let Some((id, worker)) = placed else {
        return Err(RemoteError::NoWorker);
    };
    let started = Instant::now();
    let mut pause = Duration::from_millis(2);
    while started.elapsed() < ANSWER_WITHIN {
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(25));
        let answered = db
            .run(move |tx| playground_calls::take_reply(tx, id))
            .await?;
        if let Some(text) = answered {
            return serde_json::from_str(&text).map_err(|e| {
                RemoteError::Db(DbError::Task(format!(
                    "a worker's answer did not parse: {e}"
                )))
            });
        }
    }
    let _ = db.run(move |tx| playground_calls::forget(tx, id)).await;
    Err(RemoteError::Timeout(worker))
}

/// A worker's playground thread: answers the calls addressed to `worker` until `stop`.
pub fn serve(db: &Db, worker: &str, playgrounds: &Playgrounds, stop: &AtomicBool) {
    let mut listener = Listener::new(CHANNEL);
    while !stop.load(Ordering::Relaxed) {
        let pending = db.run_blocking(|tx| playground_calls::pending(tx, worker));
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
        for PendingCall {
            id,
            student,
            request,
        } in rows
        {
            let reply = match serde_json::from_str::<Call>(&request) {
                Ok(call) => answer(playgrounds, &student, call),
                Err(e) => Reply {
                    error: Some(format!("not a playground call: {e}")),
                    body: Value::Null,
                },
            };
            let text = serde_json::to_string(&reply).unwrap_or_default();
            if let Err(error) = db.run_blocking(|tx| playground_calls::answer(tx, id, &text)) {
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

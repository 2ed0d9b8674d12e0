//! Accepting connections without letting one client hold them all. Every connection
//! is served by hyper with a timer: a request's headers must arrive within
//! `--header-timeout-secs`, and the same timer closes a keep-alive connection idle for
//! that long. At most `--max-connections` are open at once (never more than the process
//! may open files, which start-up raises to its hard limit); when the table is full, the
//! oldest connection that has not yet completed a request — a half-sent request, the
//! slowloris pattern — is closed to make room, and only if every connection is busy
//! serving is the newcomer turned away. Each request carries the peer's address
//! (`ConnectInfo`) for the per-address limits. Shutdown stops accepting, lets in-flight
//! requests finish and closes idle connections.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tower::ServiceExt as _;

use super::router::router;
use super::state::AppState;

/// One open connection, as the table sees it.
struct Open {
    /// Whether it has completed at least one request's headers.
    served: Arc<AtomicBool>,
    /// Closes it.
    close: Option<oneshot::Sender<()>>,
}

/// The open connections, oldest first, and when the cap last turned one away.
#[derive(Default)]
struct Table {
    open: BTreeMap<u64, Open>,
    last_warning: Option<Instant>,
}

/// Bounds the number of open connections; see the module docs.
pub struct Connections {
    table: Mutex<Table>,
    next: AtomicU64,
    cap: usize,
}

/// A connection's place in the table; dropping it frees the place.
pub struct Slot {
    connections: Arc<Connections>,
    id: u64,
    /// Set once a request's headers have arrived.
    pub served: Arc<AtomicBool>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connections.lock().open.remove(&self.id);
    }
}

impl Connections {
    /// A table holding at most `cap` connections.
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            table: Mutex::default(),
            next: AtomicU64::new(0),
            cap: cap.max(1),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Open connections now.
    pub fn len(&self) -> usize {
        self.lock().open.len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A place for a new connection, and the signal that closes it; closes the oldest
    /// connection that has served nothing when the table is full, or returns `None` when
    /// every open connection is serving.
    pub fn admit(self: &Arc<Self>) -> Option<(Slot, oneshot::Receiver<()>)> {
        let mut table = self.lock();
        if table.open.len() >= self.cap {
            let idle = table
                .open
                .iter()
                .find(|(_, c)| !c.served.load(Ordering::Relaxed))
                .map(|(id, _)| *id);
            let warn = table
                .last_warning
                .is_none_or(|at| at.elapsed() > Duration::from_secs(10));
            match idle {
                Some(id) => {
                    if let Some(mut old) = table.open.remove(&id)
                        && let Some(close) = old.close.take()
                    {
                        let _ = close.send(());
                    }
                    if warn {
                        table.last_warning = Some(Instant::now());
                        tracing::warn!(
                            cap = self.cap,
                            "connection limit reached: closing the oldest connection that has not sent a complete request (see --max-connections)"
                        );
                    }
                }
                None => {
                    if warn {
                        table.last_warning = Some(Instant::now());
                        tracing::warn!(
                            cap = self.cap,
                            "connection limit reached and every connection is busy: refusing new connections (see --max-connections)"
                        );
                    }
                    return None;
                }
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let served = Arc::new(AtomicBool::new(false));
        let (close, closed) = oneshot::channel();
        table.open.insert(
            id,
            Open {
                served: Arc::clone(&served),
                close: Some(close),
            },
        );
        Some((
            Slot {
                connections: Arc::clone(self),
                id,
                served,
            },
            closed,
        ))
    }
}

/// The most connections this process can hold. On Linux and macOS a socket is a file
/// descriptor: the open-file limit (raised to its hard limit first) less a reserve for
/// the database, logs and libraries.
#[cfg(unix)]
pub fn connection_ceiling() -> usize {
    let files = rlimit::increase_nofile_limit(u64::MAX)
        .or_else(|_| rlimit::getrlimit(rlimit::Resource::NOFILE).map(|(soft, _)| soft))
        .unwrap_or(1024);
    usize::try_from(files)
        .unwrap_or(usize::MAX)
        .saturating_sub(64)
        .max(16)
}

/// The most connections this process can hold. On Windows a socket is a kernel handle,
/// not a C runtime file descriptor: there is no per-process limit like Unix's open
/// files to stay under (a process may hold about 16 million handles), so only
/// `limits.max_connections` caps them.
#[cfg(not(unix))]
pub fn connection_ceiling() -> usize {
    usize::MAX
}

/// Serves `state` on `listener` until `shutdown` completes, then finishes in-flight
/// requests and returns.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = &state.config.limits;
    let cap = usize::try_from(limits.max_connections)
        .unwrap_or(usize::MAX)
        .min(connection_ceiling());
    let header_timeout = Duration::from_secs(limits.header_timeout_secs);
    let app = router(state);
    let connections = Connections::new(cap);
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(header_timeout)
        .keep_alive_timeout(header_timeout);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: back off, keep serving.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some((slot, closed)) = connections.admit() else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let served = Arc::clone(&slot.served);
        let service = app
            .clone()
            .map_request(move |mut request: Request<Incoming>| {
                served.store(true, Ordering::Relaxed);
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            });
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(service))
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            tokio::select! {
                _ = connection => {}
                _ = closed => {}
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_closes_the_oldest_connection_that_served_nothing() {
        let table = Connections::new(2);
        let (first, mut first_closed) = table.admit().unwrap();
        let (second, _second_closed) = table.admit().unwrap();
        first.served.store(true, Ordering::Relaxed);
        // Full: the second (never served) is closed for the third.
        let (_third, _) = table.admit().unwrap();
        assert!(
            first_closed.try_recv().is_err(),
            "a serving connection stays"
        );
        assert_eq!(table.len(), 2);
        drop(second);
        assert_eq!(table.len(), 2, "the evicted slot was already freed");
        // Both open connections are serving now: a newcomer is refused.
        table
            .lock()
            .open
            .values()
            .for_each(|c| c.served.store(true, Ordering::Relaxed));
        assert!(table.admit().is_none());
        drop(first);
        assert!(table.admit().is_some(), "room again once one closes");
    }

    #[test]
    fn the_ceiling_is_below_the_open_file_limit() {
        let ceiling = connection_ceiling();
        assert!(ceiling >= 16);
    }
}

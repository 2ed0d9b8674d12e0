//! Server configuration: what `gpulab serve` can be told, with the defaults a learner on a
//! laptop wants. Every field has a command-line flag and a `GPULAB_*` environment variable
//! (see `server/main.rs`); tests build a [`Config`] directly.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Settings for one running server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on. `127.0.0.1:8000` by default, so a laptop does not expose the
    /// course to its network; Docker sets `0.0.0.0:8000`.
    pub addr: SocketAddr,
    /// Where the course text comes from: `None` uses the copy embedded in the binary, a
    /// folder overrides it (for authors editing lessons, and for tests with fixtures).
    pub content_dir: Option<PathBuf>,
    /// The SQLite database file holding students and quiz attempts; created if missing.
    pub database: PathBuf,
    /// When set, `/instructor` shows the class gradebook to whoever presents this token.
    /// Never logged, never put in a URL.
    pub instructor_token: Option<String>,
    /// Caps that protect the shared GPU: queue length, job time limit, sizes.
    pub limits: crate::gpu::Limits,
    /// Experiments one student may submit per minute (0 switches the limit off).
    pub experiments_per_minute: u32,
    /// Longest a request may take before it is answered 408.
    pub request_timeout: Duration,
    /// On SIGTERM, how long running experiments get to finish before the server exits.
    pub drain_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 8000)),
            content_dir: None,
            database: PathBuf::from("gpulab.db"),
            instructor_token: None,
            limits: crate::gpu::Limits::default(),
            experiments_per_minute: 12,
            request_timeout: Duration::from_secs(30),
            drain_timeout: Duration::from_secs(30),
        }
    }
}

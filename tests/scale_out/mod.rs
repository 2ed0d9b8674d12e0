//! The scale-out processes against a real PostgreSQL server: web nodes
//! (`serve --role web`) and workers (`gpulab worker`) as separate binaries. A student's
//! playground lives in one worker and every web node reaches it; a PostgreSQL restart
//! answers 503 meanwhile and loses no acknowledged write; `db copy` moves a SQLite
//! gradebook into PostgreSQL without loss; a web node shows a live worker's measured
//! ceilings. The many-students run with killed processes
//! is `tests/cluster/` (Node, run by tests/run.sh).

mod ceilings;
mod copy;
mod instructor;
mod playground;
mod restart;
mod round;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gpulab::db::Db;
use gpulab::db::testing::{self, Scratch};

use crate::support::BinaryServer;

/// A fresh database on the test server (`GPULAB_TEST_POSTGRES`), or `None` (skipped
/// loudly) without one.
pub(crate) fn class_database() -> Option<(String, Db, Scratch)> {
    let Some(server) = testing::postgres_server() else {
        assert!(
            std::env::var(testing::REQUIRE_ENV).as_deref() != Ok("1"),
            "the scale-out tests need {}",
            testing::POSTGRES_ENV
        );
        eprintln!(
            "SKIPPED: the scale-out tests need {}",
            testing::POSTGRES_ENV
        );
        return None;
    };
    let (_, db, scratch) = testing::postgres(&server);
    let url = db.postgres_url().unwrap().to_string();
    Some((url, db, scratch))
}

/// A web node on `url`.
pub(crate) fn web_node(url: &str) -> BinaryServer {
    web_node_with(url, &[])
}

/// A web node on `url` with extra environment variables.
pub(crate) fn web_node_with(url: &str, env: &[(&str, &str)]) -> BinaryServer {
    let mut all = vec![("GPULAB_EXPERIMENTS_PER_MINUTE", "0")];
    all.extend_from_slice(env);
    BinaryServer::launch(Path::new(url), &["--role", "web"], &all, &[])
}

/// A `gpulab worker` process, killed when dropped.
pub(crate) struct Worker {
    /// The process.
    pub child: Child,
    /// Its name in the queue.
    pub name: String,
}

impl Worker {
    /// Starts a worker named `name` on `url` and waits until it serves.
    pub(crate) fn start(url: &str, name: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gpulab"))
            .args([
                "worker",
                "--database",
                url,
                "--name",
                name,
                "--lease-secs",
                "4",
            ])
            .env("RUST_LOG", "warn,gpulab=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let serving = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.contains("worker serving the class queue"));
        assert!(serving, "worker {name} did not start");
        std::thread::spawn(move || lines.for_each(drop));
        Self {
            child,
            name: name.to_string(),
        }
    }

    /// SIGKILL.
    pub(crate) fn kill_hard(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A PostgreSQL server of this test's own (`tests/pg/cluster.sh`), to stop and start.
pub(crate) struct OwnServer {
    dir: PathBuf,
    /// Its superuser URL.
    pub url: String,
}

impl OwnServer {
    /// Starts one in a fresh folder.
    pub(crate) fn start() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "gpulab-pg-{}",
            gpulab::web::identity::random_token()
        ));
        let out = cluster("start", &dir);
        Self {
            url: String::from_utf8(out).unwrap().trim().to_string(),
            dir,
        }
    }

    /// Stops the server (the data stays).
    pub(crate) fn pause(&self) {
        cluster("pause", &self.dir);
    }

    /// Starts it again on the same port.
    pub(crate) fn resume(&self) {
        cluster("resume", &self.dir);
    }
}

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(crate::support::repo_path("tests/pg/cluster.sh"))
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

fn cluster(command: &str, dir: &Path) -> Vec<u8> {
    let out = Command::new("bash")
        .arg(crate::support::repo_path("tests/pg/cluster.sh"))
        .arg(command)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cluster.sh {command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Polls `check` every 100 ms until it is true or `limit` passes; whether it became true.
pub(crate) async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

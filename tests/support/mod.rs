//! Shared test setup: spawn the app on `127.0.0.1:0` (shut down when the test ends) or
//! the real binary, and the helpers every area's tests use — HTTP conveniences
//! ([`client`]), quiz answers ([`quiz`]), experiment jobs ([`jobs`]) and hostile raw
//! requests with their expected error shapes ([`hostile`]).

pub(crate) mod binary;
pub(crate) mod client;
pub(crate) mod hostile;
pub(crate) mod jobs;
pub(crate) mod quiz;

use std::path::PathBuf;

use gpulab::config::Config;
use gpulab::web::{AppState, serve};
use tokio::sync::oneshot;

/// A running app; dropping it shuts the server down.
pub(crate) struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The default student: `get`, `jobs::post` and job polls go through it, so they
    /// share one student id (jobs are readable by their owner only).
    pub client: reqwest::Client,
    /// The state it serves, for computing expectations.
    pub state: AppState,
    shutdown: Option<oneshot::Sender<()>>,
    /// Keeps the temporary database folder alive as long as the app.
    _dir: Option<tempfile::TempDir>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl TestApp {
    /// GET `path` as the default student.
    pub(crate) async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request reaches the app")
    }
}

/// Path of a folder in the repository.
pub(crate) fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// A config for tests: embedded course, port 0, database at `database`.
pub(crate) fn test_config(database: PathBuf) -> Config {
    // Beside the test's database, where no record is unless a test writes one (the
    // default would read a record a benchmark left in target/).
    let cpu_reference = database.with_file_name("cpu-reference.json");
    Config {
        addr: "127.0.0.1:0".parse().unwrap(),
        content_dir: None,
        database: gpulab::db::Location::Sqlite(database),
        instructor_token: None,
        role: gpulab::config::Role::All,
        behind_https: false,
        cpu_reference,
        limits: gpulab::config::Limits {
            // Off by default so tests may queue many jobs; the rate-limit test sets it.
            experiments_per_minute: 0,
            ..gpulab::config::Limits::default()
        },
    }
}

/// Spawns the app with the embedded course and a fresh database.
pub(crate) async fn spawn() -> TestApp {
    spawn_tuned(|_| {}).await
}

/// Spawns the app with a fresh database and the test config changed by `tune`.
pub(crate) async fn spawn_tuned(tune: impl FnOnce(&mut Config)) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path().join("gpulab.db"));
    tune(&mut config);
    let mut app = spawn_with(config).await;
    app._dir = Some(dir);
    app
}

/// Spawns the app with the gradebook on, unlocked by `token`.
pub(crate) async fn spawn_with_token(token: &str) -> TestApp {
    let token = token.to_string();
    spawn_tuned(|config| config.instructor_token = Some(token)).await
}

/// A client that keeps cookies, like a browser that has loaded a course page: one
/// client is one student, with a student cookie from the start (writes without one are
/// refused). Cookies the server sets later (an instructor session) are kept too.
pub(crate) fn student() -> reqwest::Client {
    let jar = reqwest::cookie::Jar::default();
    jar.add_cookie_str(
        &format!("gpulab_student={}; Path=/", student_id()),
        &"http://127.0.0.1/".parse().unwrap(),
    );
    reqwest::Client::builder()
        .cookie_provider(std::sync::Arc::new(jar))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A browser on its first visit: it keeps cookies but has none yet.
pub(crate) fn new_browser() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A fresh, well-formed student id (32 lower-case hex digits), as the server mints them.
pub(crate) fn student_id() -> String {
    gpulab::web::identity::random_token()
}

/// Spawns the app with `config`, on a fresh port, with [`quiz::MEASURED_SEED`] as its
/// measurement for every hardware-graded question.
pub(crate) async fn spawn_with(config: Config) -> TestApp {
    let app = spawn_unmeasured(config).await;
    quiz::seed_measurements(&app.state);
    app
}

/// Spawns the app with `config` and no measurements yet.
pub(crate) async fn spawn_unmeasured(config: Config) -> TestApp {
    let state = AppState::new(config.clone()).expect("course content loads");
    let listener = tokio::net::TcpListener::bind(config.addr).await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = oneshot::channel::<()>();
    let served = state.clone();
    tokio::spawn(async move {
        serve(listener, served, async {
            let _ = rx.await;
        })
        .await
        .expect("server runs");
    });
    TestApp {
        base,
        client: student(),
        state,
        shutdown: Some(tx),
        _dir: None,
    }
}

/// The HTML-escaped form askama writes for `text` (numeric entities).
pub(crate) fn escaped(text: &str) -> String {
    text.replace('&', "&#38;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
        .replace('<', "&#60;")
        .replace('>', "&#62;")
}

/// The address (`127.0.0.1:PORT`) in the server's start-up line, "GPU Lab serving N
/// lessons on http://127.0.0.1:PORT (database …", when `log` holds it: how a test learns
/// the port the OS gave a server started with `--addr 127.0.0.1:0`.
pub(crate) fn serving_address(log: &str) -> Option<&str> {
    let (before, after) = log.split_once(" on http://")?;
    before.contains("serving").then_some(())?;
    after.split_whitespace().next()
}

/// The real `gpulab` binary serving on a port the OS picked (no port is chosen first and
/// bound later, where another test could take it) with the given database.
pub(crate) struct BinaryServer {
    /// The child process.
    pub child: std::process::Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// Every line the server has logged so far.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl BinaryServer {
    /// Starts the binary and waits until it says it is serving.
    pub(crate) fn start(database: &std::path::Path) -> Self {
        Self::start_with_env(database, &[])
    }

    /// [`BinaryServer::start`] with extra environment variables.
    pub(crate) fn start_with_env(database: &std::path::Path, env: &[(&str, &str)]) -> Self {
        Self::launch(database, &[], env, &[])
    }

    /// Starts the binary with extra `serve` flags and environment variables, run
    /// through `prefix` (e.g. `prlimit --nofile=256`) when it is not empty.
    pub(crate) fn launch(
        database: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        prefix: &[&str],
    ) -> Self {
        use std::io::{BufRead, BufReader};
        let binary = binary::gpulab();
        let mut command = match prefix.split_first() {
            Some((program, rest)) => {
                let mut command = std::process::Command::new(program);
                command.args(rest).arg(binary);
                command
            }
            None => std::process::Command::new(binary),
        };
        let mut child = command
            .args(["serve", "--addr", "127.0.0.1:0"])
            .arg("--database")
            .arg(database)
            .args(args)
            .env("RUST_LOG", "warn,gpulab=info")
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let base = lines.by_ref().map_while(Result::ok).find_map(|line| {
            log.lock().unwrap().push(line.clone());
            serving_address(&line).map(|address| format!("http://{address}"))
        });
        let base = base.expect("gpulab did not start");
        // Keep draining stderr so the server never blocks on a full pipe.
        let kept = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        Self { child, base, log }
    }

    /// Waits up to `timeout` for a logged line containing `needle`; whether one came.
    pub(crate) fn wait_for_log(&self, needle: &str, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.log.lock().unwrap().iter().any(|l| l.contains(needle)) {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The server's resident memory now, in bytes (`VmRSS`).
    pub(crate) fn resident_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS in /proc/PID/status");
        kib * 1024
    }

    /// SIGKILL: no chance to flush or clean up.
    pub(crate) fn kill_hard(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for BinaryServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

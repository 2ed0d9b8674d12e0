//! Test helpers: spawn the app on `127.0.0.1:0` and shut it down when the test ends.

use std::path::PathBuf;

use gpulab::app::{AppState, serve};
use gpulab::config::Config;
use tokio::sync::oneshot;

/// A running app; dropping it shuts the server down.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The state it serves, for computing expectations.
    pub state: AppState,
    shutdown: Option<oneshot::Sender<()>>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

impl TestApp {
    /// GET `path` with no special headers.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        reqwest::get(format!("{}{path}", self.base))
            .await
            .expect("request reaches the app")
    }
}

/// Path of a folder in the repository.
pub fn repo_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Spawns the app with the embedded course.
pub async fn spawn() -> TestApp {
    spawn_with(Config {
        addr: "127.0.0.1:0".parse().unwrap(),
        content_dir: None,
    })
    .await
}

/// Spawns the app with `config`, on a fresh port.
pub async fn spawn_with(config: Config) -> TestApp {
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
        state,
        shutdown: Some(tx),
    }
}

/// The HTML-escaped form askama writes for `text` (numeric entities).
pub fn escaped(text: &str) -> String {
    text.replace('&', "&#38;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
        .replace('<', "&#60;")
        .replace('>', "&#62;")
}

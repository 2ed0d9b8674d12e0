//! The real `gpulab` binary: help text, a graceful exit on SIGTERM, Ctrl-C (SIGINT)
//! draining as SIGTERM does, and request lines in the log only when the log filter
//! asks for them.

#[cfg(unix)]
use std::io::{BufRead, BufReader};
use std::process::Command;
#[cfg(unix)]
use std::process::Stdio;
#[cfg(unix)]
use std::time::{Duration, Instant};

#[test]
fn help_explains_serve_and_check() {
    let output = Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for word in ["serve", "check", "--addr", "GPULAB_ADDR"] {
        assert!(help.contains(word), "help lacks {word}:\n{help}");
    }
}

/// `gpulab serve` on a port the OS picks (read back from its log) with a fresh SQLite
/// file and `RUST_LOG=filter`, once it has said it is serving; its log so far is in
/// `log`.
#[cfg(unix)]
struct Served {
    child: std::process::Child,
    stderr: BufReader<std::process::ChildStderr>,
    log: String,
    /// `127.0.0.1:PORT`.
    address: String,
    _dir: tempfile::TempDir,
}

#[cfg(unix)]
impl Served {
    fn start(filter: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_gpulab"))
            .args(["serve", "--addr", "127.0.0.1:0"])
            .arg("--database")
            .arg(dir.path().join("cli.db"))
            .env("RUST_LOG", filter)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut log = String::new();
        while !log.contains("serving") {
            assert!(
                stderr.read_line(&mut log).unwrap() > 0,
                "the server did not report that it is serving: {log}"
            );
        }
        let address = log
            .lines()
            .find_map(crate::support::serving_address)
            .unwrap_or_else(|| panic!("no address in the serving line: {log}"))
            .to_string();
        Self {
            child,
            stderr,
            log,
            address,
            _dir: dir,
        }
    }

    fn sigterm(&self) {
        self.signal("TERM");
    }

    /// Sends `SIG<name>` (`TERM`, `INT`: what a terminal's Ctrl-C sends).
    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

#[cfg(unix)]
#[test]
fn sigterm_shuts_the_server_down_cleanly() {
    let mut served = Served::start("info");
    assert!(raw_http::get_home(&served.address).contains("GPU Lab"));
    served.sigterm();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(code) = served.child.try_wait().unwrap() {
            assert!(code.success(), "exit status {code}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "server did not exit within 10 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The drain's log lines after the one naming `signal` (their messages, without the
/// time stamps), once the server stopped on it after one page view.
#[cfg(unix)]
fn drain_after(signal: &str, named: &str) -> Vec<String> {
    use std::io::Read;
    let mut served = Served::start("info");
    assert!(raw_http::get_home(&served.address).contains("GPU Lab"));
    served.signal(signal);
    served.stderr.read_to_string(&mut served.log).unwrap();
    let status = served.child.wait().unwrap();
    assert!(status.success(), "exit status {status} on SIG{signal}");
    let log = &served.log;
    let marker = format!("{named} received, shutting down");
    let at = log
        .find(&marker)
        .unwrap_or_else(|| panic!("no {marker:?} in the log: {log}"));
    log[at + marker.len()..]
        .lines()
        .map(without_colours)
        .filter_map(|line| {
            line.split_once(": ")
                .map(|(_, message)| message.to_string())
        })
        .collect()
}

/// `line` without ANSI colour codes (`ESC [ … m`).
#[cfg(unix)]
fn without_colours(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// Ctrl-C is how a learner stops the server in a terminal (on every OS; on Windows it
/// is the usual way): it must drain exactly as SIGTERM does.
#[cfg(unix)]
#[test]
fn ctrl_c_drains_as_sigterm_does() {
    let term = drain_after("TERM", "SIGTERM");
    let ctrl_c = drain_after("INT", "Ctrl-C");
    assert!(
        term.last().is_some_and(|l| l.contains("shut down cleanly")),
        "{term:?}"
    );
    assert_eq!(ctrl_c, term);
}

/// The server's log after one page view, run with `RUST_LOG=filter` until SIGTERM.
#[cfg(unix)]
fn log_of_one_page_view(filter: &str) -> String {
    use std::io::Read;
    let mut served = Served::start(filter);
    assert!(raw_http::get_home(&served.address).contains("GPU Lab"));
    served.sigterm();
    served.stderr.read_to_string(&mut served.log).unwrap();
    served.child.wait().unwrap();
    served.log
}

#[cfg(unix)]
#[test]
fn request_lines_are_logged_only_when_the_filter_asks_for_them() {
    // The trace layer costs a page view its spans even when nothing is printed, so it
    // is there only when the filter enables tower_http's DEBUG lines.
    let asked = log_of_one_page_view("info,tower_http=debug");
    assert!(asked.contains("finished processing request"), "{asked}");
    let default = log_of_one_page_view("info,tower_http=info");
    assert!(default.contains("serving"), "{default}");
    assert!(!default.contains("processing request"), "{default}");
}

#[cfg(unix)]
mod raw_http {
    /// A tiny blocking GET over a std TCP stream, so this test needs no async runtime.
    pub(super) fn get_home(address: &str) -> String {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(
            stream,
            "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }
}

#[test]
fn worker_gpu_counts_within_the_mask_it_was_given() {
    // A scheduler granted GPUs 3 and 5: --gpu 2 does not exist for this process, and
    // the worker says so before it touches the database or the driver.
    let output = Command::new(env!("CARGO_BIN_EXE_gpulab"))
        .args([
            "worker",
            "--gpu",
            "2",
            "--database",
            "postgres://nobody@127.0.0.1:1/none",
        ])
        .env("CUDA_VISIBLE_DEVICES", "3,5")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("CUDA_VISIBLE_DEVICES=3,5") && stderr.contains("0 to 1"),
        "{stderr}"
    );
}

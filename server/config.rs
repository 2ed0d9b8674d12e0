//! Server configuration: what `gpulab serve` can be told, with the defaults a learner
//! on a laptop wants. [`Config`] and [`Limits`] are the `clap` argument structs
//! themselves, so each setting is written once: its flag, its `GPULAB_*` environment
//! variable, its default and its help text. The README's configuration table is
//! checked against them (`tests/config_table.rs`), every cap reaches the validation
//! messages, the OpenAPI bounds and the panels' inputs through [`Limits`], and tests
//! build a [`Config`] directly.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

/// Settings for one running server.
#[derive(Debug, Clone, clap::Args)]
pub struct Config {
    /// Address and port to listen on. Use 0.0.0.0:8000 to accept other machines.
    #[arg(long, env = "GPULAB_ADDR", default_value_t = Config::DEFAULT_ADDR)]
    pub addr: SocketAddr,
    /// Serve lessons from this folder instead of the copy built into the binary
    /// (useful while editing lessons; restart to pick up changes).
    #[arg(long = "content", env = "GPULAB_CONTENT", value_name = "DIR")]
    pub content_dir: Option<PathBuf>,
    /// Where students, attempts and predictions are kept: a SQLite file (created if
    /// missing; the default), or a `postgres://user:password@host/db` URL shared by
    /// several web nodes and GPU workers.
    #[arg(
        long,
        env = "GPULAB_DATABASE",
        default_value = "gpulab.db",
        value_name = "FILE|URL"
    )]
    pub database: crate::db::Location,
    /// Token that unlocks the class gradebook at /instructor. Without it the gradebook
    /// is switched off. Prefer the environment variable: flags show up in `ps`.
    #[arg(
        long,
        env = "GPULAB_INSTRUCTOR_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub instructor_token: Option<String>,
    /// `all` serves pages and runs experiments in this process (the default); `web`
    /// serves pages and queues experiments in the PostgreSQL `--database`, where
    /// `gpulab worker` processes run them (several web nodes, one worker per GPU).
    #[arg(long, env = "GPULAB_ROLE", value_enum, default_value_t = Role::All)]
    pub role: Role,
    /// The server is reached through an HTTPS proxy that ends TLS (Caddy, nginx, a
    /// Kubernetes ingress): every cookie is marked `Secure`, so browsers send the student
    /// and instructor cookies over HTTPS only. Leave it off when students use plain
    /// http:// (a laptop, a class LAN), where `Secure` cookies would not be kept.
    #[arg(long, env = "GPULAB_BEHIND_HTTPS", default_value_t = false)]
    pub behind_https: bool,
    /// This machine's CPU SGEMM reference, which `bash tests/bench/sgemm.sh` writes (numpy
    /// with OpenBLAS against GPU Lab's CPU product); the matmul panel compares its CPU
    /// times with it. A relative path is read from the working directory; no file, no
    /// comparison. A record made on another CPU model or core count is not used.
    #[arg(
        long,
        env = "GPULAB_CPU_REFERENCE",
        default_value = Config::DEFAULT_CPU_REFERENCE,
        value_name = "FILE"
    )]
    pub cpu_reference: PathBuf,
    /// Caps that protect the shared GPU and the server.
    #[command(flatten)]
    pub limits: Limits,
}

impl Config {
    /// `127.0.0.1:8000`: a laptop does not expose the course to its network; Docker
    /// sets `0.0.0.0:8000`.
    pub const DEFAULT_ADDR: SocketAddr = SocketAddr::V4(std::net::SocketAddrV4::new(
        std::net::Ipv4Addr::LOCALHOST,
        8000,
    ));

    /// Where `tests/bench/sgemm.sh` writes its record, from the repository's root: a
    /// learner who ran it and then `cargo run --release` there gets the comparison.
    pub const DEFAULT_CPU_REFERENCE: &str = "target/bench/cpu-reference.json";
}

impl Default for Config {
    fn default() -> Self {
        Self {
            addr: Self::DEFAULT_ADDR,
            content_dir: None,
            database: crate::db::Location::Sqlite(PathBuf::from("gpulab.db")),
            instructor_token: None,
            role: Role::All,
            behind_https: false,
            cpu_reference: PathBuf::from(Self::DEFAULT_CPU_REFERENCE),
            limits: Limits::default(),
        }
    }
}

/// What a `serve` process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// Pages, quizzes and the experiment workers, in one process.
    All,
    /// Pages, quizzes and the API; experiments go to the class queue in PostgreSQL.
    Web,
}

/// Every cap: queue, time limits, experiment sizes, playground memory, rates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, clap::Args)]
pub struct Limits {
    /// Experiments that may wait in the queue at once; more are refused with 429 and
    /// Retry-After.
    #[arg(long, env = "GPULAB_QUEUE_LENGTH", default_value_t = Limits::DEFAULT.queue_length)]
    pub queue_length: usize,
    /// Experiments that may run at once on the GPU. Keep 1 (the default) so every
    /// measurement has the GPU to itself; more lets a big class through faster but makes
    /// timings interfere.
    #[arg(long, env = "GPULAB_GPU_CONCURRENCY", default_value_t = Limits::DEFAULT.gpu_concurrency, value_parser = clap::value_parser!(u16).range(1..=8))]
    pub gpu_concurrency: u16,
    /// Experiments one student may submit per minute while other students' experiments
    /// are waiting; more get 429 with Retry-After (a student alone with the GPU is not
    /// limited). 0 switches the limit off.
    #[arg(long, env = "GPULAB_EXPERIMENTS_PER_MINUTE", default_value_t = Limits::DEFAULT.experiments_per_minute)]
    pub experiments_per_minute: u32,
    /// Longest any request may take, in seconds, before it is answered 408.
    #[arg(long, env = "GPULAB_REQUEST_TIMEOUT_SECS", default_value_t = Limits::DEFAULT.request_timeout_secs, value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout_secs: u64,
    /// On SIGTERM or Ctrl-C: seconds a running experiment gets to finish before the
    /// server exits anyway. Waiting experiments are cancelled at once.
    #[arg(long, env = "GPULAB_DRAIN_TIMEOUT_SECS", default_value_t = Limits::DEFAULT.drain_timeout_secs)]
    pub drain_timeout_secs: u64,
    /// Longest one experiment may run, in seconds, before it is stopped.
    #[arg(long, env = "GPULAB_JOB_TIMEOUT_SECS", default_value_t = Limits::DEFAULT.job_timeout_secs)]
    pub job_timeout_secs: u64,
    /// Largest transfer-benchmark size in bytes a student may ask for (the benchmark
    /// holds twice this in host memory while it runs).
    #[arg(long, env = "GPULAB_MAX_TRANSFER_BYTES", default_value_t = Limits::DEFAULT.max_transfer_bytes)]
    pub max_transfer_bytes: u64,
    /// Largest matrix side a student may ask for (matmul crossover, precision shoot-out).
    #[arg(long, env = "GPULAB_MAX_MATMUL_SIZE", default_value_t = Limits::DEFAULT.max_matmul_size)]
    pub max_matmul_size: usize,
    /// Most optimiser steps in one training run.
    #[arg(long, env = "GPULAB_MAX_TRAIN_STEPS", default_value_t = Limits::DEFAULT.max_train_steps)]
    pub max_train_steps: usize,
    /// Widest hidden layer a training run may ask for.
    #[arg(long, env = "GPULAB_MAX_HIDDEN", default_value_t = Limits::DEFAULT.max_hidden)]
    pub max_hidden: usize,
    /// Memory (MiB) one student's allocator playground may reserve on the GPU.
    #[arg(long, env = "GPULAB_PLAYGROUND_MIB_PER_STUDENT", default_value_t = Limits::DEFAULT.playground_mib_per_student)]
    pub playground_mib_per_student: u64,
    /// Memory (MiB) all students' playgrounds together may reserve.
    #[arg(long, env = "GPULAB_PLAYGROUND_MIB_TOTAL", default_value_t = Limits::DEFAULT.playground_mib_total)]
    pub playground_mib_total: u64,
    /// Memory (MiB) the playgrounds of all students at one network address may reserve
    /// together, so one machine cannot take the whole total. Raise it to the total when
    /// the whole class reaches the server through one NAT address.
    #[arg(long, env = "GPULAB_PLAYGROUND_MIB_PER_ADDRESS", default_value_t = Limits::DEFAULT.playground_mib_per_address)]
    pub playground_mib_per_address: u64,
    /// Experiments one student may have waiting at once while other students'
    /// experiments are waiting too; more get 429 until one starts (a student alone with
    /// the GPU may fill the queue, and whoever comes next still gets in).
    #[arg(long, env = "GPULAB_PENDING_PER_STUDENT", default_value_t = Limits::DEFAULT.pending_per_student, value_parser = clap::value_parser!(u64).range(1..))]
    pub pending_per_student: u64,
    /// Experiments the students at one network address may have waiting at once, all
    /// together, while other students' experiments are waiting, so one machine cannot
    /// fill the queue. Raise it to the queue length when
    /// the whole class reaches the server through one NAT address.
    #[arg(long, env = "GPULAB_PENDING_PER_ADDRESS", default_value_t = Limits::DEFAULT.pending_per_address, value_parser = clap::value_parser!(u64).range(1..))]
    pub pending_per_address: u64,
    /// Quiz and exam attempts one student may submit per minute; more get 429.
    #[arg(long, env = "GPULAB_ATTEMPTS_PER_MINUTE", default_value_t = Limits::DEFAULT.attempts_per_minute, value_parser = clap::value_parser!(u32).range(1..))]
    pub attempts_per_minute: u32,
    /// Training scripts one student may have the script doctor check per minute; more
    /// get 429.
    #[arg(long, env = "GPULAB_SCRIPT_CHECKS_PER_MINUTE", default_value_t = Limits::DEFAULT.script_checks_per_minute, value_parser = clap::value_parser!(u32).range(1..))]
    pub script_checks_per_minute: u32,
    /// Writes (experiments, playground changes, quiz attempts) one network address may
    /// make per minute, all its students together. A whole class behind one NAT address
    /// shares it: raise it for such a class (about 30 per student).
    #[arg(long, env = "GPULAB_WRITES_PER_MINUTE_PER_ADDRESS", default_value_t = Limits::DEFAULT.writes_per_minute_per_address, value_parser = clap::value_parser!(u32).range(1..))]
    pub writes_per_minute_per_address: u32,
    /// Connections open at once (also capped by the process's open-file limit); when
    /// full, the oldest connection that has not sent a complete request is closed.
    #[arg(long, env = "GPULAB_MAX_CONNECTIONS", default_value_t = Limits::DEFAULT.max_connections, value_parser = clap::value_parser!(u64).range(16..))]
    pub max_connections: u64,
    /// Seconds a client has to send a request's headers; a keep-alive connection idle
    /// this long is closed too.
    #[arg(long, env = "GPULAB_HEADER_TIMEOUT_SECS", default_value_t = Limits::DEFAULT.header_timeout_secs, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_secs: u64,
}

impl Limits {
    /// The defaults, once: clap shows them in `--help` and [`Default`] returns them.
    pub const DEFAULT: Self = Self {
        queue_length: 16,
        gpu_concurrency: 1,
        experiments_per_minute: 12,
        request_timeout_secs: 30,
        drain_timeout_secs: 30,
        job_timeout_secs: 120,
        max_transfer_bytes: 1 << 30,
        max_matmul_size: 4096,
        max_train_steps: 2000,
        max_hidden: 1024,
        playground_mib_per_student: 512,
        playground_mib_total: 4096,
        playground_mib_per_address: 2048,
        pending_per_student: 2,
        pending_per_address: 8,
        attempts_per_minute: 20,
        script_checks_per_minute: 30,
        writes_per_minute_per_address: 600,
        max_connections: 4096,
        header_timeout_secs: 15,
    };

    /// Longest one experiment may run.
    pub fn job_timeout(&self) -> Duration {
        Duration::from_secs(self.job_timeout_secs)
    }

    /// Longest a request may take.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs)
    }

    /// How long a running experiment may finish after SIGTERM.
    pub fn drain_timeout(&self) -> Duration {
        Duration::from_secs(self.drain_timeout_secs)
    }

    /// One student's playground cap in bytes.
    pub fn playground_per_student_bytes(&self) -> u64 {
        self.playground_mib_per_student << 20
    }

    /// All playgrounds' cap in bytes.
    pub fn playground_total_bytes(&self) -> u64 {
        self.playground_mib_total << 20
    }

    /// The cap on the playgrounds of one network address, in bytes.
    pub fn playground_per_address_bytes(&self) -> u64 {
        self.playground_mib_per_address << 20
    }
}

/// Learners' own GPU runs (`course::learner_runs`): fixed caps, not flags. The size is
/// the router's body limit for that one route, set before any server's flags are read;
/// the course's own H200 recording of `gpulab bench all --json` is about 390 KB.
impl Limits {
    /// The largest run file a learner may upload.
    pub const LEARNER_RUN_MAX_BYTES: usize = 1 << 20;
    /// How many runs one learner keeps.
    pub const LEARNER_RUNS_PER_STUDENT: i64 = 8;
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The README's configuration table, rendered from the flags themselves: flag,
/// environment variable, default, and the help text.
pub fn markdown_table() -> String {
    use clap::Args;
    let command = Config::augment_args(clap::Command::new("serve"));
    let mut out =
        String::from("| flag | environment | default | what it does |\n|---|---|---|---|\n");
    for arg in command.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        let env = arg
            .get_env()
            .map_or("—".to_string(), |e| format!("`{}`", e.to_string_lossy()));
        let default = arg
            .get_default_values()
            .first()
            .map_or("unset".to_string(), |d| {
                format!("`{}`", d.to_string_lossy())
            });
        let help = arg
            .get_long_help()
            .or_else(|| arg.get_help())
            .map(|h| {
                h.to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        out.push_str(&format!("| `--{long}` | {env} | {default} | {help} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, FromArgMatches};

    #[test]
    fn clap_defaults_are_the_default_config() {
        let command = Config::augment_args(clap::Command::new("serve").no_binary_name(true));
        let matches = command.try_get_matches_from(Vec::<String>::new()).unwrap();
        let parsed = Config::from_arg_matches(&matches).unwrap();
        // Environment variables set by the test harness would change this; none of the
        // GPULAB_* names above are set in tests.
        assert_eq!(parsed.limits, Limits::default());
        assert_eq!(parsed.addr, Config::default().addr);
        assert_eq!(parsed.database, Config::default().database);
        assert_eq!(parsed.cpu_reference, Config::default().cpu_reference);
    }
}

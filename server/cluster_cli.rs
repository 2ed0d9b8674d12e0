//! The scale-out and storage commands: `gpulab worker` (serve the class queue in
//! PostgreSQL on one GPU), `gpulab db copy` (move a SQLite gradebook into PostgreSQL)
//! and `gpulab db backup` / `restore` (a consistent copy while the class runs). Parsing
//! and process concerns only: the work is in `engine::worker_process`, `db::copy` and
//! `db::backup`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use gpulab::config::Limits;
use gpulab::db::{Db, Location};
use gpulab::engine::queue_bench;
use gpulab::engine::worker_loop::WorkerSettings;
use gpulab::engine::worker_process;

/// `gpulab worker`'s arguments.
#[derive(Args)]
pub(crate) struct WorkerArgs {
    /// The GPU this worker runs on (it sees only that one): the N-th entry of a
    /// `CUDA_VISIBLE_DEVICES` the scheduler set, else GPU N in PCI-bus order (as
    /// nvidia-smi numbers them); ignored without a GPU.
    #[arg(long, env = "GPULAB_GPU", default_value_t = 0)]
    gpu: u32,
    /// The class's PostgreSQL database (`postgres://user:password@host/db`).
    #[arg(long, env = "GPULAB_DATABASE", value_name = "URL")]
    database: Location,
    /// Its name in the queue and in results (default: HOST-gpuN-PID).
    #[arg(long, env = "GPULAB_WORKER_NAME")]
    name: Option<String>,
    /// Seconds a claimed job stays this worker's without a renewal; a worker renews
    /// every third of it, and a job whose worker died is retried after it.
    #[arg(long, env = "GPULAB_LEASE_SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(2..=3600))]
    lease_secs: u64,
    #[command(flatten)]
    limits: Limits,
}

impl WorkerArgs {
    /// The GPU to select before anything loads the driver.
    pub(crate) fn gpu(&self) -> u32 {
        self.gpu
    }

    /// Serves the class queue until SIGTERM or Ctrl-C (then finishes the job in hand).
    pub(crate) fn run(self) -> anyhow::Result<()> {
        if !matches!(self.database, Location::Postgres(_)) {
            bail!(
                "a worker serves the class queue in PostgreSQL: --database must be a postgres:// URL, not {}",
                self.database
            );
        }
        let db = connect(&self.database, 4)?;
        let host = gpulab::host::host_name("worker");
        let settings = WorkerSettings {
            name: self
                .name
                .unwrap_or_else(|| format!("{host}-gpu{}-{}", self.gpu, std::process::id())),
            lease: Duration::from_secs(self.lease_secs),
            limits: self.limits,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                runtime.block_on(crate::shutdown_signal());
                tracing::info!("stopping after the job in hand");
                flag.store(true, Ordering::Relaxed);
            }
        });
        worker_process::serve(&db, &settings, &stop).context("the worker stopped")?;
        Ok(())
    }
}

/// `gpulab db …`.
#[derive(Subcommand)]
pub(crate) enum DbCommand {
    /// Copy a SQLite gradebook (students, attempts, answers, predictions, history) into
    /// an empty PostgreSQL database, in one transaction; prints every table's count and
    /// a checksum of the attempts and answers on both sides, and fails if they differ.
    Copy {
        /// The SQLite file.
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
        /// The PostgreSQL database (`postgres://…`), migrated if new; must hold no students.
        #[arg(long, value_name = "URL")]
        to: Location,
    },
    /// Write a consistent copy of the SQLite database to FILE while the server runs
    /// (SQLite's `VACUUM INTO`: a snapshot of every commit before it began), check it
    /// (`PRAGMA integrity_check`, schema version, row counts) and say what it wrote. For
    /// PostgreSQL use `pg_dump`.
    Backup {
        /// The new file to write (never overwritten).
        #[arg(value_name = "FILE")]
        to: PathBuf,
        /// The database to copy, as `gpulab serve --database` names it.
        #[arg(
            long,
            env = "GPULAB_DATABASE",
            default_value = "gpulab.db",
            value_name = "FILE"
        )]
        database: Location,
    },
    /// Put a backup in place as the database, after checking it. Refuses while a server
    /// has the database open; the database it replaces is kept beside it, renamed
    /// `<database>.replaced-<time>`.
    Restore {
        /// The backup (from `gpulab db backup`).
        #[arg(value_name = "FILE")]
        from: PathBuf,
        /// The database to replace, as `gpulab serve --database` names it.
        #[arg(
            long,
            env = "GPULAB_DATABASE",
            default_value = "gpulab.db",
            value_name = "FILE"
        )]
        database: Location,
    },
    /// Benchmark the experiment queue itself: no-op jobs per second (submit, claim,
    /// complete) with 1, 2 and 3 worker threads, and submit → claim latency (p50, p99),
    /// on a scratch SQLite file (or the database given), beside an in-process hand-off
    /// measured in the same run. It adds rows owned by `queue-bench` and deletes them.
    BenchQueue {
        /// The database to measure: a PostgreSQL URL or a SQLite file (a scratch one is
        /// best; default: a new SQLite file in a temporary folder).
        #[arg(long, value_name = "URL")]
        database: Option<Location>,
        /// Jobs per measurement.
        #[arg(long, default_value_t = 2000)]
        jobs: usize,
        /// Worker counts to measure.
        #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
        workers: Vec<usize>,
    },
}

impl DbCommand {
    /// Runs the command.
    pub(crate) fn run(self) -> anyhow::Result<()> {
        match self {
            Self::Copy { from, to } => {
                if !from.is_file() {
                    bail!("{} is not a SQLite file", from.display());
                }
                if !matches!(to, Location::Postgres(_)) {
                    bail!("--to must be a postgres:// URL");
                }
                let source = Db::open(&from).context("cannot open the SQLite file")?;
                let target = connect(&to, 2)?;
                let report = gpulab::db::copy::copy(&source, &target)?;
                print!("{report}");
                Ok(())
            }
            Self::Backup { to, database } => {
                let source = sqlite_file(&database, "backup")?;
                let report = gpulab::db::backup::backup(&source, &to)
                    .with_context(|| format!("no backup of {} was written", source.display()))?;
                println!("wrote a consistent copy of {}", source.display());
                print!("{report}");
                Ok(())
            }
            Self::Restore { from, database } => {
                let target = sqlite_file(&database, "restore")?;
                let (report, kept) = gpulab::db::backup::restore(&from, &target)
                    .with_context(|| format!("{} was not restored", target.display()))?;
                println!("restored {} from {}", target.display(), from.display());
                if let Some(kept) = kept {
                    println!("the database it replaced is kept at {}", kept.display());
                }
                print!("{report}");
                Ok(())
            }
            Self::BenchQueue {
                database,
                jobs,
                workers,
            } => {
                let jobs = jobs.clamp(10, 100_000);
                let scratch = tempfile_dir()?;
                let db = match &database {
                    Some(location) => connect(location, 8)?,
                    None => Db::open(&scratch.join("bench.db"))?,
                };
                println!("{}", queue_bench::HEADER);
                for n in workers.into_iter().filter(|n| (1..=16).contains(n)) {
                    println!("{}", queue_bench::measure(&db, n, jobs)?);
                    println!("{}", queue_bench::in_process(n, jobs));
                }
                let _ = std::fs::remove_dir_all(&scratch);
                Ok(())
            }
        }
    }
}

/// The SQLite file `database` names; PostgreSQL has its own tools.
fn sqlite_file(database: &Location, what: &str) -> anyhow::Result<PathBuf> {
    match database {
        Location::Sqlite(path) => Ok(path.clone()),
        Location::Postgres(_) => bail!(
            "gpulab db {what} is for the SQLite file; for PostgreSQL use its own tools, which are consistent while the class runs: pg_dump --format=custom --file=gpulab.dump '{database}' (and pg_restore --dbname=URL gpulab.dump into an empty database)"
        ),
    }
}

fn connect(location: &Location, pool: u32) -> anyhow::Result<Db> {
    Db::connect(location, pool).with_context(|| format!("cannot open the database {location}"))
}

/// A fresh folder for the benchmark's SQLite file.
fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("gpulab-queue-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

//! The `gpulab` command: parse the command line (flags and `GPULAB_*` environment
//! variables), then serve the course or check its content. `serve` is the default.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use gpulab::app::{AppState, serve};
use gpulab::config::Config;
use gpulab::course::{ContentSource, Course};
use gpulab::gpu::{Limits, card, cuda::CudaHandle, doctor as gpu_doctor};
use gpulab::tables;
use tracing_subscriber::EnvFilter;

/// GPU Lab: a browser course on how GPUs behave under model training.
///
/// Run with no subcommand to serve the course on http://127.0.0.1:8000, then open that
/// address in a browser. Works with or without an NVIDIA GPU.
#[derive(Parser)]
#[command(name = "gpulab", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the course over HTTP (the default when no subcommand is given).
    ///
    /// Logs go to standard error; set RUST_LOG (e.g. RUST_LOG=debug) for more detail.
    /// Ctrl-C or SIGTERM stops the server gracefully.
    Serve(ServeArgs),
    /// Validate the course content and print each problem as `file:line: message`.
    ///
    /// Checks front matter, the lesson list, directives, code languages, math and every
    /// internal link. Exits non-zero if anything is wrong.
    Check(CheckArgs),
    /// Run the layered GPU check: driver library, NVML, CUDA context, NVRTC, cuBLAS.
    ///
    /// Each layer prints ok, FAILED with the underlying error, or skipped. Use it first
    /// when the course says it runs on the CPU but you expected a GPU.
    Doctor,
    /// Print the device card: the GPU (or the CPU when there is none).
    Device,
    /// Print a memory snapshot: NVML and driver view of the GPU, or host memory.
    Memory,
    /// Run a benchmark on this machine and print a table.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Host-to-device and device-to-host bandwidth, pinned and pageable, 1 KiB up to
    /// --max-bytes (memcpy bandwidth on a machine without a GPU).
    Transfer {
        /// Largest copy in bytes.
        #[arg(long, default_value_t = 1 << 30)]
        max_bytes: u64,
    },
    /// Square FP32 matmuls from 16 to --max-size on the CPU and (if present) the GPU,
    /// with the crossover size.
    Matmul {
        /// Largest matrix side.
        #[arg(long, default_value_t = 4096)]
        max_size: usize,
    },
    /// The timing trap: host timer without sync, with sync, and device timestamps.
    Timing,
    /// The same GEMM in FP32, TF32, FP16 and BF16: TFLOP/s and error against FP64.
    Precision {
        /// Matrix side.
        #[arg(long, default_value_t = 4096)]
        size: usize,
    },
    /// The training run: loss curve, step time, samples/s, cost of reading the loss.
    Training {
        /// Tickets per step.
        #[arg(long, default_value_t = 32)]
        batch: usize,
        /// Hidden width.
        #[arg(long, default_value_t = 128)]
        hidden: usize,
        /// Optimiser steps.
        #[arg(long, default_value_t = 200)]
        steps: usize,
        /// Read the loss every this many steps.
        #[arg(long, default_value_t = 10)]
        log_every: usize,
        /// fp32 or bf16 (mixed precision with FP32 master weights).
        #[arg(long, default_value = "fp32")]
        precision: String,
        /// sgd or adam.
        #[arg(long, default_value = "adam")]
        optimizer: String,
    },
    /// Lesson 9's deliberate mistakes: batch-on-host or log-every-step.
    BreakIt {
        /// Which mistake.
        #[arg(long, default_value = "batch-on-host")]
        case: String,
    },
}

#[derive(Args, Clone)]
struct ServeArgs {
    /// Address and port to listen on. Use 0.0.0.0:8000 to accept other machines.
    #[arg(long, env = "GPULAB_ADDR", default_value = "127.0.0.1:8000")]
    addr: SocketAddr,
    /// Serve lessons from this folder instead of the copy built into the binary
    /// (useful while editing lessons; restart to pick up changes).
    #[arg(long, env = "GPULAB_CONTENT", value_name = "DIR")]
    content: Option<PathBuf>,
    /// SQLite database file for students and quiz attempts (created if missing).
    #[arg(
        long,
        env = "GPULAB_DATABASE",
        default_value = "gpulab.db",
        value_name = "FILE"
    )]
    database: PathBuf,
    /// Token that unlocks the class gradebook at /instructor. Without it the gradebook
    /// is switched off. Prefer the environment variable: flags show up in `ps`.
    #[arg(
        long,
        env = "GPULAB_INSTRUCTOR_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    instructor_token: Option<String>,
    /// Experiments that may wait in the queue at once; more are refused with 429 and
    /// Retry-After. Experiments always run one at a time.
    #[arg(long, env = "GPULAB_QUEUE_LENGTH", default_value_t = 16)]
    queue_length: usize,
    /// Experiments that may run at once on the GPU. Keep 1 (the default) so every
    /// measurement has the GPU to itself; more lets a big class through faster but makes
    /// timings interfere.
    #[arg(long, env = "GPULAB_GPU_CONCURRENCY", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=8))]
    gpu_concurrency: u16,
    /// Experiments one student may submit per minute; more get 429 with Retry-After.
    /// 0 switches the limit off.
    #[arg(long, env = "GPULAB_EXPERIMENTS_PER_MINUTE", default_value_t = 12)]
    experiments_per_minute: u32,
    /// Longest any request may take, in seconds, before it is answered 408.
    #[arg(long, env = "GPULAB_REQUEST_TIMEOUT_SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    request_timeout_secs: u64,
    /// On SIGTERM or Ctrl-C: seconds a running experiment gets to finish before the
    /// server exits anyway. Waiting experiments are cancelled at once.
    #[arg(long, env = "GPULAB_DRAIN_TIMEOUT_SECS", default_value_t = 30)]
    drain_timeout_secs: u64,
    /// Longest one experiment may run, in seconds, before it is stopped.
    #[arg(long, env = "GPULAB_JOB_TIMEOUT_SECS", default_value_t = 120)]
    job_timeout_secs: u64,
    /// Largest transfer-benchmark size in bytes a student may ask for.
    #[arg(long, env = "GPULAB_MAX_TRANSFER_BYTES", default_value_t = 1 << 30)]
    max_transfer_bytes: u64,
    /// Largest matrix side a student may ask for in the matmul crossover.
    #[arg(long, env = "GPULAB_MAX_MATMUL_SIZE", default_value_t = 4096)]
    max_matmul_size: usize,
    /// Most optimiser steps in one training run.
    #[arg(long, env = "GPULAB_MAX_TRAIN_STEPS", default_value_t = 2000)]
    max_train_steps: usize,
    /// Widest hidden layer a training run may ask for.
    #[arg(long, env = "GPULAB_MAX_HIDDEN", default_value_t = 1024)]
    max_hidden: usize,
    /// Memory (MiB) one student's allocator playground may reserve on the GPU.
    #[arg(long, env = "GPULAB_PLAYGROUND_MIB_PER_STUDENT", default_value_t = 512)]
    playground_mib_per_student: u64,
    /// Memory (MiB) all students' playgrounds together may reserve.
    #[arg(long, env = "GPULAB_PLAYGROUND_MIB_TOTAL", default_value_t = 4096)]
    playground_mib_total: u64,
}

#[derive(Args)]
struct CheckArgs {
    /// Content folder to check. Defaults to ./content when it exists, else the copy
    /// built into the binary.
    #[arg(long, env = "GPULAB_CONTENT", value_name = "DIR")]
    content: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Check(args)) => check(args),
        Some(Command::Serve(args)) => run_server(args),
        Some(Command::Doctor) => doctor(),
        Some(Command::Device) => device(),
        Some(Command::Bench(BenchCommand::Transfer { max_bytes })) => {
            print(tables::transfer(max_bytes))
        }
        Some(Command::Bench(BenchCommand::Matmul { max_size })) => print(tables::matmul(max_size)),
        Some(Command::Bench(BenchCommand::Timing)) => print(tables::timing()),
        Some(Command::Bench(BenchCommand::Precision { size })) => print(tables::precision(size)),
        Some(Command::Bench(BenchCommand::Training {
            batch,
            hidden,
            steps,
            log_every,
            precision,
            optimizer,
        })) => print(tables::training(&gpulab::gpu::train::TrainParams {
            batch,
            hidden,
            steps,
            log_every,
            precision,
            optimizer,
        })),
        Some(Command::Bench(BenchCommand::BreakIt { case })) => print(tables::break_it(&case)),
        Some(Command::Memory) => print(Ok(tables::memory())),
        None => run_server(cli.serve),
    }
}

fn check(args: CheckArgs) -> ExitCode {
    let dir = args.content.or_else(|| {
        let local = Path::new("content");
        local
            .join("course.toml")
            .exists()
            .then(|| local.to_path_buf())
    });
    let source = ContentSource::from_option(dir.as_deref());
    match Course::load(&source) {
        Ok(course) => {
            for lesson in &course.lessons {
                println!(
                    "ok  {:>2}. {:<24} {:>5} words  {:>2} min  {} directives",
                    lesson.number,
                    lesson.slug,
                    lesson.words,
                    lesson.minutes,
                    lesson.directives.len()
                );
            }
            println!(
                "{}: {} lessons, no problems",
                source.display_path(""),
                course.lessons.len()
            );
            ExitCode::SUCCESS
        }
        Err(problems) => {
            for problem in &problems.0 {
                eprintln!("{problem}");
            }
            eprintln!("{} problem(s) found", problems.0.len());
            ExitCode::FAILURE
        }
    }
}

fn run_server(args: ServeArgs) -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,tower_http=info")),
        )
        .init();
    match serve_until_signal(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("gpulab: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn serve_until_signal(args: ServeArgs) -> anyhow::Result<()> {
    let config = Config {
        addr: args.addr,
        content_dir: args.content,
        database: args.database,
        instructor_token: args.instructor_token,
        limits: Limits {
            queue_capacity: args.queue_length,
            concurrency: usize::from(args.gpu_concurrency),
            job_timeout: Duration::from_secs(args.job_timeout_secs),
            max_transfer_bytes: args.max_transfer_bytes,
            max_matmul_size: args.max_matmul_size,
            max_train_steps: args.max_train_steps,
            max_hidden: args.max_hidden,
            playground_per_student_bytes: args.playground_mib_per_student << 20,
            playground_total_bytes: args.playground_mib_total << 20,
        },
        experiments_per_minute: args.experiments_per_minute,
        request_timeout: Duration::from_secs(args.request_timeout_secs),
        drain_timeout: Duration::from_secs(args.drain_timeout_secs),
    };
    let state = AppState::new(config.clone()).context("cannot start")?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    tracing::info!(
        "GPU Lab serving {} lessons on http://{} (database {}, instructor gradebook {})",
        state.course.lessons.len(),
        listener.local_addr()?,
        state.db.path().display(),
        if config
            .instructor_token
            .as_deref()
            .is_some_and(|t| !t.is_empty())
        {
            "on"
        } else {
            "off"
        }
    );
    let draining = state.clone();
    let drain = async move {
        shutdown_signal().await;
        drain_experiments(&draining, config.drain_timeout).await;
    };
    serve(listener, state.clone(), drain).await?;
    state
        .db
        .checkpoint()
        .await
        .context("cannot flush the database")?;
    tracing::info!("shut down cleanly");
    Ok(())
}

/// Stops taking experiments, fails the waiting ones, and gives the running ones until
/// `timeout` to finish; pages and job polls keep being served meanwhile.
async fn drain_experiments(state: &AppState, timeout: Duration) {
    state.engine.close();
    let engine = state.engine.clone();
    let idle = tokio::task::spawn_blocking(move || engine.wait_idle(timeout))
        .await
        .unwrap_or(false);
    if idle {
        tracing::info!("no experiment running; stopping the server");
    } else {
        tracing::warn!("an experiment was still running after {timeout:?}; it is cancelled");
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C received, shutting down"),
        () = terminate => tracing::info!("SIGTERM received, shutting down"),
    }
}

fn doctor() -> ExitCode {
    let report = gpu_doctor::run();
    for (i, layer) in report.layers.iter().enumerate() {
        let mark = match layer.status {
            gpu_doctor::Status::Ok => "ok     ",
            gpu_doctor::Status::Failed => "FAILED ",
            gpu_doctor::Status::Skipped => "skipped",
        };
        println!("{}. [{mark}] {}: {}", i + 1, layer.name, layer.detail);
    }
    println!("\n{}", report.verdict);
    ExitCode::SUCCESS
}

fn device() -> ExitCode {
    let card = CudaHandle::open()
        .map(|h| h.card)
        .unwrap_or_else(|reason| card::cpu_card(&reason));
    match serde_json::to_string_pretty(&card) {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gpulab: {e}");
            ExitCode::FAILURE
        }
    }
}

fn print(table: Result<String, String>) -> ExitCode {
    report(table, |text| print!("{text}"))
}

fn report<T>(result: Result<T, String>, print: impl FnOnce(T)) -> ExitCode {
    match result {
        Ok(value) => {
            print(value);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gpulab: {e}");
            ExitCode::FAILURE
        }
    }
}

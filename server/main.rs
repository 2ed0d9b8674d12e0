//! The `gpulab` command: parse the command line (flags and `GPULAB_*` environment
//! variables), then serve the course, check its content, or run the GPU tools —
//! `doctor`, `device`, `memory`, `selftest`, and `bench`, whose subcommands come from
//! the experiment registry — or check training scripts with `lint`. `serve` is the
//! default.

mod bench_cli;
mod cluster_cli;
mod lint_cli;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use gpulab::config::{Config, Limits};
use gpulab::course::{ContentSource, Course};
use gpulab::engine::backend::Backend;
use gpulab::gpu::doctor as gpu_doctor;
use gpulab::web::{AppState, serve};
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
    serve: Config,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the course over HTTP (the default when no subcommand is given).
    ///
    /// Logs go to standard error; set RUST_LOG (e.g. RUST_LOG=debug) for more detail.
    /// Ctrl-C or SIGTERM (on Windows Ctrl-C, Ctrl-Break or closing the console) stops
    /// the server gracefully.
    Serve(Config),
    /// Validate the course content and print each problem as `file:line: message`.
    ///
    /// Checks front matter, the lesson list, directives, code languages, math and every
    /// internal link. Exits non-zero if anything is wrong.
    Check(CheckArgs),
    /// Run the layered GPU check: driver library, NVML, CUDA context, NVRTC (loads,
    /// compiles every kernel), the driver loading the kernels, cuBLAS.
    ///
    /// Each layer prints ok, FAILED with the underlying error, or skipped. Use it first
    /// when the course says it runs on the CPU but you expected a GPU.
    Doctor {
        /// Print the report as JSON (the same as GET /api/doctor).
        #[arg(long)]
        json: bool,
    },
    /// Print the device card: the GPU (or the CPU when there is none).
    Device,
    /// Print a memory snapshot: NVML and driver view of the GPU, or host memory.
    Memory,
    /// Check every experiment against its reference at small sizes, on the GPU when
    /// there is one and always on the CPU; one line per check, non-zero exit on failure.
    Selftest,
    /// Run experiments on this machine and print tables (or JSON with --json).
    #[command(subcommand)]
    Bench(bench_cli::BenchCommand),
    /// Check PyTorch training scripts for the course's pitfalls, without running them.
    ///
    /// Prints `file:line:col: CODE message` for each finding (`--format json`,
    /// `github` or `sarif` for the other shapes). Exits 0 when every file is clean, 1
    /// on any finding, 2 when a file could not be checked (unreadable, not in its
    /// declared encoding, not valid Python, too large) or the configuration is wrong.
    Lint(lint_cli::LintArgs),
    /// Print the OpenAPI document a server with the default caps serves.
    Openapi,
    /// Run allocator sequences (tests/gpu/allocator_sequences.json) through the
    /// playground's model of PyTorch's caching allocator and print memory_allocated()
    /// and memory_reserved() after each step as JSON, for tests/gpu/ref_allocator.py.
    AllocatorModel {
        /// The sequences file.
        file: PathBuf,
    },
    /// Serve the class-wide experiment queue in PostgreSQL on one GPU (or the CPU), for
    /// web nodes started with `serve --role web`. Run one per GPU.
    Worker(cluster_cli::WorkerArgs),
    /// Database tools: `copy` moves a SQLite gradebook into PostgreSQL.
    #[command(subcommand)]
    Db(cluster_cli::DbCommand),
    /// Reference GPU results shown beside CPU runs (content/reference-runs/).
    #[command(subcommand)]
    Reference(ReferenceCommand),
}

#[derive(Subcommand)]
enum ReferenceCommand {
    /// Import a `gpulab bench all --json` document recorded on a GPU into
    /// <content>/reference-runs/, stamped with its device, driver, date and version.
    Import {
        /// The JSON file `gpulab bench all --json` wrote.
        file: PathBuf,
        /// Content folder to write into.
        #[arg(
            long,
            env = "GPULAB_CONTENT",
            value_name = "DIR",
            default_value = "content"
        )]
        content: PathBuf,
        /// Accept a run made on the CPU backend as a test fixture (tests/gpu/gpu-run.sh
        /// --cpu): labelled "not a GPU", and refused by `gpulab check` in a course.
        #[arg(long)]
        fixture: bool,
    },
}

#[derive(Args)]
struct CheckArgs {
    /// Content folder to check. Defaults to ./content when it exists, else the copy
    /// built into the binary.
    #[arg(long, env = "GPULAB_CONTENT", value_name = "DIR")]
    content: Option<PathBuf>,
}

/// `gpulab allocator-model FILE`: the model's figures for each sequence, as JSON.
fn allocator_model(file: &Path) -> ExitCode {
    use gpulab::playground::allocator::sequences::{SequenceFile, run};
    let parsed = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))
        .and_then(|text| serde_json::from_str::<SequenceFile>(&text).map_err(|e| e.to_string()))
        .and_then(|f| f.sequences.iter().map(run).collect::<Result<Vec<_>, _>>());
    match parsed {
        Ok(outcomes) => {
            print_json(&serde_json::json!({ "model": "gpulab", "sequences": outcomes }))
        }
        Err(e) => {
            eprintln!("gpulab allocator-model: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Check(args)) => check(args),
        Some(Command::Serve(config)) => run_server(config),
        Some(Command::Doctor { json }) => doctor(json),
        Some(Command::Device) => print_json(&Backend::open().1),
        Some(Command::Memory) => {
            let (backend, _, _) = Backend::open();
            let snapshot = gpulab::playground::snapshot(&backend.memory_source());
            print!("{}", gpulab::playground::snapshot_table(&snapshot));
            ExitCode::SUCCESS
        }
        Some(Command::Selftest) => {
            let report = gpulab::engine::selftest::run();
            print!("{}", report.render());
            if report.failed() == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Some(Command::Bench(command)) => command.run(),
        Some(Command::Lint(args)) => args.run(),
        Some(Command::AllocatorModel { file }) => allocator_model(&file),
        Some(Command::Worker(args)) => {
            let selected = match gpulab::gpu::select_device(args.gpu()) {
                Ok(line) => line,
                Err(e) => {
                    eprintln!("gpulab worker: {e}");
                    return ExitCode::from(2);
                }
            };
            init_logging();
            tracing::info!("this worker runs on {selected}");
            report(args.run())
        }
        Some(Command::Db(command)) => report(command.run()),
        Some(Command::Reference(ReferenceCommand::Import {
            file,
            content,
            fixture,
        })) => match import_reference(&file, &content, fixture) {
            Ok(path) => {
                println!("imported {} as {}", file.display(), path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("gpulab: cannot import {}: {e:#}", file.display());
                ExitCode::FAILURE
            }
        },
        Some(Command::Openapi) => {
            print_json(&gpulab::web::router::openapi_document(&Limits::default()))
        }
        None => run_server(cli.serve),
    }
}

/// Validates the bench document at `file` and writes it as a recorded reference run
/// under `content`; refuses to overwrite an earlier import of the same run.
fn import_reference(file: &Path, content: &Path, fixture: bool) -> anyhow::Result<PathBuf> {
    use gpulab::course::reference_runs;
    let text = std::fs::read_to_string(file).context("cannot read it")?;
    let (name, reference) = reference_runs::import(&text, fixture)?;
    let dir = content.join(reference_runs::DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(name);
    let mut json = serde_json::to_string_pretty(&reference)?;
    json.push('\n');
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    std::io::Write::write_all(&mut out, json.as_bytes())?;
    Ok(path)
}

fn print_json(value: &impl serde::Serialize) -> ExitCode {
    match serde_json::to_string_pretty(value) {
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
        Ok(course) if course.references.iter().any(|r| r.is_fixture()) => {
            for fixture in course.references.iter().filter(|r| r.is_fixture()) {
                eprintln!(
                    "{}: `{}` is a test fixture made on the CPU, not a GPU's run: it belongs in tests/fixtures/, not in a course",
                    source.display_path(gpulab::course::reference_runs::DIR),
                    fixture.title
                );
            }
            ExitCode::FAILURE
        }
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
                "ok      predictions: {} question(s), one for every quantity a live experiment measures",
                course.predictions.len()
            );
            println!(
                "ok      reference runs: {} file(s), {} published figure(s), {} recorded run(s)",
                course.references.len(),
                course
                    .references
                    .iter()
                    .map(|r| r.figures.len())
                    .sum::<usize>(),
                course
                    .references
                    .iter()
                    .filter(|r| r.recorded.is_some())
                    .count()
            );
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

fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,tower_http=info")),
        )
        .init();
}

fn run_server(config: Config) -> ExitCode {
    init_logging();
    report(serve_until_signal(config))
}

/// Exit status for a command's outcome, with its error on standard error.
fn report(outcome: anyhow::Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("gpulab: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[tokio::main]
async fn serve_until_signal(config: Config) -> anyhow::Result<()> {
    let state = AppState::new(config.clone()).context("cannot start")?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .with_context(|| format!("cannot listen on {}", config.addr))?;
    tracing::info!(
        "GPU Lab serving {} lessons on http://{} (database {}, instructor gradebook {})",
        state.course.lessons.len(),
        listener.local_addr()?,
        state.db.location(),
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
    let drain_timeout = config.limits.drain_timeout();
    let drain = async move {
        shutdown_signal().await;
        drain_experiments(&draining, drain_timeout).await;
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
    state.engine.close().await;
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

/// Waits for a request to stop, which every caller drains the same way: Ctrl-C on every
/// OS; SIGTERM on Linux and macOS (what `docker stop`, systemd and Kubernetes send); on
/// Windows, where there is no SIGTERM, Ctrl-Break, the console window being closed and
/// the machine shutting down (Windows ends the process about 5 s after those two, so a
/// long experiment may not finish its drain there).
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = ctrl_c => tracing::info!("Ctrl-C received, shutting down"),
        other = other_stop_signal() => tracing::info!("{other} received, shutting down"),
    }
}

/// SIGTERM.
#[cfg(unix)]
async fn other_stop_signal() -> &'static str {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut signal) => {
            signal.recv().await;
        }
        Err(e) => {
            tracing::warn!("cannot listen for SIGTERM: {e}");
            std::future::pending::<()>().await;
        }
    }
    "SIGTERM"
}

/// The console's other stop events: Ctrl-Break, the window closed, the machine
/// shutting down.
#[cfg(windows)]
async fn other_stop_signal() -> &'static str {
    use tokio::signal::windows;
    // Each listener on its own: one that cannot be set up waits forever, the others
    // still work.
    macro_rules! listen {
        ($make:expr, $what:literal) => {
            async {
                match $make {
                    Ok(mut listener) => {
                        listener.recv().await;
                    }
                    Err(e) => {
                        tracing::warn!("cannot listen for {}: {e}", $what);
                        std::future::pending::<()>().await;
                    }
                }
            }
        };
    }
    tokio::select! {
        () = listen!(windows::ctrl_break(), "Ctrl-Break") => "Ctrl-Break",
        () = listen!(windows::ctrl_close(), "the console closing") => "console close",
        () = listen!(windows::ctrl_shutdown(), "a system shutdown") => "system shutdown",
    }
}

#[cfg(not(any(unix, windows)))]
async fn other_stop_signal() -> &'static str {
    std::future::pending().await
}

fn doctor(json: bool) -> ExitCode {
    let report = gpu_doctor::run();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("the report serialises")
        );
        return ExitCode::SUCCESS;
    }
    for (i, layer) in report.layers.iter().enumerate() {
        let mark = match layer.status {
            gpu_doctor::Status::Ok => "ok     ",
            gpu_doctor::Status::Failed => "FAILED ",
            gpu_doctor::Status::Skipped => "skipped",
        };
        let advisory = if layer.advisory {
            " (advisory: the GPU does not need it)"
        } else {
            ""
        };
        println!(
            "{}. [{mark}] {}{advisory}: {}",
            i + 1,
            layer.name,
            layer.detail
        );
    }
    println!("\n{}", report.verdict);
    ExitCode::SUCCESS
}

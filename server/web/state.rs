//! The one [`AppState`] every handler shares through `State`: read-only after start-up,
//! one `Arc` around [`Shared`], so the several clones axum makes per request are one
//! atomic increment each, not one per field (a page view clones it about four times). It is built from the [`Config`] by loading the
//! course, opening the database, starting the engine and reading the CPU reference
//! record made on the engine's CPU, if there is one; nothing in it knows about
//! routes, so handlers depend on the state and never the reverse.

use std::sync::Arc;

use super::assets::Assets;
use super::guard::AddressLimiter;
use super::login_guard::{LoginGuard, check_token};
use super::page::{Layout, Prerendered};
use crate::classroom::Classroom;
use crate::classroom::learner_flow::DeviceStatus;
use crate::config::Config;
use crate::course::problem::Problems;
use crate::course::{ContentSource, Course};
use crate::db::{Db, DbError};
use crate::engine::Engine;
use crate::host::CpuInfo;
use crate::host::blas_reference::{self, BlasReference};
use crate::metrics::Metrics;
use crate::ratelimit::StudentLimiter;

/// Everything handlers share, behind one `Arc`; fields are read through `Deref`.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`AppState`] holds.
pub struct Shared {
    /// The configuration the server started with.
    pub config: Arc<Config>,
    /// The rendered course.
    pub course: Arc<Course>,
    /// Embedded static files.
    pub assets: Arc<Assets>,
    /// The base layout every page shares.
    pub layout: Arc<Layout>,
    /// The pages that are the same for everyone, rendered and encoded once.
    pub pages: Arc<Prerendered>,
    /// What live experiments run on, in a sentence (fixed when the engine starts).
    pub device: Arc<DeviceStatus>,
    /// The database of students and attempts.
    pub db: Db,
    /// The experiment engine (GPU or CPU) and its queue.
    pub engine: Engine,
    /// Per-student experiment rate limit.
    pub experiment_limiter: Arc<StudentLimiter>,
    /// Per-student quiz and exam attempt rate limit.
    pub attempt_limiter: Arc<StudentLimiter>,
    /// Script checks per student (`--script-checks-per-minute`).
    pub lint_limiter: Arc<StudentLimiter>,
    /// Writes per network address.
    pub write_limiter: Arc<AddressLimiter>,
    /// Failed instructor sign-ins.
    pub login_guard: Arc<LoginGuard>,
    /// Wrong resume codes: slowed per address like wrong instructor tokens, with no
    /// class-wide lockout (a code carries 60 random bits).
    pub resume_guard: Arc<LoginGuard>,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// The class's domain: rounds, measured grading, the gradebook's read model.
    pub classroom: Classroom,
    /// The CPU SGEMM reference record (`--cpu-reference`), read once at start-up, when
    /// it was made on the CPU the experiments run on; `/api/device` serves it.
    pub blas_reference: Option<BlasReference>,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The course content is broken.
    #[error(transparent)]
    Content(#[from] Problems),
    /// The database could not be opened or migrated.
    #[error("cannot open the database: {0}")]
    Database(#[from] DbError),
    /// A page template failed to render (a bug).
    #[error("cannot render the pages: {0}")]
    Template(#[from] askama::Error),
    /// The instructor token is too weak to put a class's grades behind.
    #[error("{0}")]
    WeakToken(String),
    /// `--role web` with a SQLite file: web nodes share the queue through PostgreSQL.
    #[error(
        "--role web needs a shared PostgreSQL database (--database postgres://…); with a SQLite file run `gpulab serve` alone"
    )]
    WebNeedsPostgres,
}

impl AppState {
    /// Loads and renders the course named by `config` and opens its database; fails
    /// with every content problem, or the database error.
    pub fn new(config: Config) -> Result<Self, StartupError> {
        if let Some(token) = config.instructor_token.as_deref().filter(|t| !t.is_empty()) {
            check_token(token).map_err(StartupError::WeakToken)?;
        }
        let db = Db::connect(
            &config.database,
            u32::from(config.limits.gpu_concurrency) + 8,
        )?;
        // Probing for a GPU (the library search alone is some 60 ms without one) runs on
        // a second core while the course renders: together they were most of a cold
        // start.
        let probe = (config.role == crate::config::Role::All).then(|| {
            let (limits, db) = (config.limits.clone(), db.clone());
            std::thread::spawn(move || Engine::start(limits, db))
        });
        let course = Course::load(&ContentSource::from_option(config.content_dir.as_deref()))?;
        let assets = Assets::load();
        let layout = Layout::new(&course.title, &assets);
        // The engine picks the device first: every lesson header says what it is.
        let engine = match (config.role, probe) {
            (_, Some(probe)) => probe
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            (crate::config::Role::All, None) => Engine::start(config.limits.clone(), db.clone()),
            (crate::config::Role::Web, None) if db.dialect() == crate::db::Dialect::Postgres => {
                Engine::web(config.limits.clone(), db.clone())
            }
            (crate::config::Role::Web, None) => return Err(StartupError::WebNeedsPostgres),
        };
        let device = DeviceStatus::from_card(&engine.card);
        let blas_reference = read_blas_reference(&config.cpu_reference, &engine.card.cpu);
        let pages = Prerendered::render(&course, &layout, &assets, &device)?;
        // Compress every page and asset once, off the request path.
        let warm: Vec<_> = pages.all().chain(assets.all()).cloned().collect();
        std::thread::Builder::new()
            .name("gpulab-precompress".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                warm.iter().for_each(|page| page.warm());
                tracing::info!(
                    resources = warm.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "pages and assets precompressed"
                );
            })
            .ok();
        let metrics = Metrics::new(engine.clone());
        let course = Arc::new(course);
        let classroom = Classroom::new(db.clone(), engine.clone(), Arc::clone(&course));
        Ok(Self(Arc::new(Shared {
            experiment_limiter: Arc::new(StudentLimiter::new(config.limits.experiments_per_minute)),
            attempt_limiter: Arc::new(StudentLimiter::new(config.limits.attempts_per_minute)),
            lint_limiter: Arc::new(StudentLimiter::new(config.limits.script_checks_per_minute)),
            write_limiter: AddressLimiter::new(config.limits.writes_per_minute_per_address),
            login_guard: Arc::default(),
            resume_guard: Arc::new(LoginGuard::per_address()),
            metrics: Arc::new(metrics),
            config: Arc::new(config),
            course,
            assets: Arc::new(assets),
            layout: Arc::new(layout),
            pages: Arc::new(pages),
            device: Arc::new(device),
            db,
            engine,
            classroom,
            blas_reference,
        })))
    }
}

/// The record at `path` when it was made on `cpu` (the CPU the experiments run on: on a
/// web node, the worker's). No file is no record, quietly; a file that cannot be used
/// is logged once with why, and the panel then shows no comparison rather than a wrong
/// one.
fn read_blas_reference(path: &std::path::Path, cpu: &CpuInfo) -> Option<BlasReference> {
    match blas_reference::load(path, cpu) {
        Ok(found) => {
            if found.is_some() {
                tracing::info!(path = %path.display(), "CPU SGEMM reference read");
            }
            found
        }
        Err(why) => {
            tracing::warn!(path = %path.display(), "CPU SGEMM reference not used: {why}");
            None
        }
    }
}

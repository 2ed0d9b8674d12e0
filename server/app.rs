//! The application: one [`AppState`] shared by every handler, the [`router`] that maps
//! URLs to handlers, and [`serve`], which runs it on a listener until shutdown. Tests bind
//! `127.0.0.1:0`, call `serve` with their own shutdown future, and talk HTTP to it.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware;
use axum::routing::{delete, get, post};
use tokio::net::TcpListener;
use tower_http::compression::CompressionLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::assets::Assets;
use crate::config::Config;
use crate::course::problem::Problems;
use crate::course::{ContentSource, Course};
use crate::db::{Db, DbError};
use crate::gpu::Engine;
use crate::identity;
use crate::pages::Layout;
use crate::routes;

/// Everything handlers share: read-only after start-up, cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The configuration the server started with.
    pub config: Arc<Config>,
    /// The rendered course.
    pub course: Arc<Course>,
    /// Embedded static files.
    pub assets: Arc<Assets>,
    /// The base layout every page shares.
    pub layout: Arc<Layout>,
    /// The database of students and attempts.
    pub db: Db,
    /// The experiment engine (GPU or CPU) and its queue.
    pub engine: Engine,
    /// Instructor session ids issued since start-up.
    pub instructor_sessions: Arc<Mutex<HashSet<String>>>,
    /// Per-student experiment rate limit.
    pub experiment_limiter: Arc<crate::ratelimit::StudentLimiter>,
    /// Prometheus metrics.
    pub metrics: Arc<crate::metrics::Metrics>,
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
}

impl AppState {
    /// Loads and renders the course named by `config` and opens its database; fails
    /// with every content problem, or the database error.
    pub fn new(config: Config) -> Result<Self, StartupError> {
        let course = Course::load(&ContentSource::from_option(config.content_dir.as_deref()))?;
        let db = Db::open(&config.database)?;
        let assets = Assets::load();
        let layout = Layout::new(&course.title, &assets);
        let engine = Engine::start(config.limits.clone());
        let metrics = crate::metrics::Metrics::new(engine.clone());
        Ok(Self {
            experiment_limiter: Arc::new(crate::ratelimit::StudentLimiter::new(
                config.experiments_per_minute,
            )),
            metrics: Arc::new(metrics),
            config: Arc::new(config),
            course: Arc::new(course),
            assets: Arc::new(assets),
            layout: Arc::new(layout),
            db,
            engine,
            instructor_sessions: Arc::default(),
        })
    }
}

/// The Content-Security-Policy for every response: our own scripts and styles only.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Largest request body accepted: a full final exam is a few kilobytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Maps every URL to its handler.
pub fn router(state: AppState) -> Router {
    use routes::{experiments, instructor, me, pages, playground, quiz};
    // Pages and APIs know the student (the middleware issues the cookie); static files
    // and the instructor routes do not need to.
    let student_routes = Router::new()
        .route("/", get(pages::home))
        .route("/lessons/{slug}", get(pages::lesson))
        .route(
            "/lessons/{slug}/quiz",
            get(quiz::lesson_quiz).post(quiz::submit_lesson_quiz),
        )
        .route(
            "/final-exam",
            get(quiz::final_exam).post(quiz::submit_final_exam),
        )
        .route("/api/quizzes/{id}", get(quiz::api_quiz))
        .route("/api/quizzes/{id}/attempts", post(quiz::api_submit))
        .route("/api/me/progress", get(me::progress_json))
        .route("/me/name", post(me::set_name))
        .route("/me/export", get(me::export))
        .route("/me/reset", post(me::reset))
        .route("/api/playground", get(playground::view))
        .route("/api/playground/tensors", post(playground::allocate))
        .route("/api/playground/tensors/{name}", delete(playground::free))
        .route("/api/playground/empty-cache", post(playground::empty_cache))
        .route("/api/playground/reset", post(playground::reset))
        .route("/api/experiments/transfer", post(experiments::transfer))
        .route("/api/experiments/matmul", post(experiments::matmul))
        .route("/api/experiments/timing", post(experiments::timing))
        .route("/api/experiments/training", post(experiments::training))
        .route("/api/experiments/precision", post(experiments::precision))
        .route("/api/experiments/break-it", post(experiments::break_it))
        .route_layer(middleware::from_fn(identity::identify));
    Router::new()
        .merge(student_routes)
        .route("/about", get(pages::about))
        .route("/api/openapi.json", get(routes::openapi::openapi))
        .route("/api/device", get(experiments::device))
        .route("/api/memory", get(playground::memory))
        .route("/api/doctor", get(experiments::doctor))
        .route("/api/jobs/{id}", get(experiments::job))
        .route("/healthz", get(routes::health::healthz))
        .route("/readyz", get(routes::health::readyz))
        .route("/metrics", get(crate::metrics::scrape))
        .route("/instructor", get(instructor::gradebook))
        .route("/instructor/login", post(instructor::login))
        .route("/instructor/logout", post(instructor::logout))
        .route("/instructor/grades.csv", get(instructor::grades_csv))
        .route("/instructor/missed.csv", get(instructor::missed_csv))
        .route("/static/{*path}", get(routes::assets::asset))
        .fallback(pages::not_found)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::metrics::track,
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            state.config.request_timeout,
        ))
        .with_state(state)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn(crate::error::uniform_rejections))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            HeaderName::from_static("referrer-policy"),
            HeaderValue::from_static("same-origin"),
        ))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
}

/// Serves `state` on `listener` until `shutdown` completes, then finishes in-flight
/// requests and returns.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

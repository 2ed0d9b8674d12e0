//! The application: one [`AppState`] shared by every handler, the [`router`] that maps
//! URLs to handlers, and [`serve`], which runs it on a listener until shutdown. Tests bind
//! `127.0.0.1:0`, call `serve` with their own shutdown future, and talk HTTP to it.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use axum::routing::get;
use tokio::net::TcpListener;
use tower_http::compression::CompressionLayer;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

use crate::assets::Assets;
use crate::config::Config;
use crate::course::problem::Problems;
use crate::course::{ContentSource, Course};
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
}

impl AppState {
    /// Loads and renders the course named by `config`; fails with every content problem.
    pub fn new(config: Config) -> Result<Self, Problems> {
        let course = Course::load(&ContentSource::from_option(config.content_dir.as_deref()))?;
        let assets = Assets::load();
        let layout = Layout::new(&course.title, &assets);
        Ok(Self {
            config: Arc::new(config),
            course: Arc::new(course),
            assets: Arc::new(assets),
            layout: Arc::new(layout),
        })
    }
}

/// The Content-Security-Policy for every response: our own scripts and styles only.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Maps every URL to its handler.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(routes::pages::home))
        .route("/lessons/{slug}", get(routes::pages::lesson))
        .route("/about", get(routes::pages::about))
        .route("/static/{*path}", get(routes::assets::asset))
        .fallback(routes::pages::not_found)
        .with_state(state)
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

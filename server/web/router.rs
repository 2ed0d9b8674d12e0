//! The router: every URL mapped to its handler and the layers every response passes
//! through. `serve` (serve.rs) runs it on a listener until shutdown; tests bind
//! `127.0.0.1:0`, call `serve` with their own shutdown future, and talk HTTP to it.
//!
//! JSON routes are mounted through `utoipa-axum`, which collects each handler's
//! OpenAPI annotation as it mounts the route, and the experiment routes come from the
//! registry; so the document at `/api/openapi.json` lists exactly what is served.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::BoxError;
use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, DefaultBodyLimit, Extension, RawQuery, State};
use axum::http::{HeaderName, HeaderValue, Request, Response, StatusCode, header};
use axum::routing::{get, post};
use hyper::body::Incoming;
use tower::{Service, ServiceBuilder};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnFailure, TraceLayer};
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::identity::{CookiePolicy, StudentId};
use super::layers::{CompressUnencoded, Track, UniformRejections};
use super::openapi::{self, ApiDoc, Document};
use super::routes::{
    assets, class_round, experiments, gpu_runs, health, instructor, instructor_cockpit,
    instructor_exports, learner, lint, me, notebooks, pages, playground, quiz, resume,
};
use super::state::AppState;
use super::student_layer::{StudentLayer, WriteBudget};
use crate::config::Limits;
use crate::experiments::REGISTRY;

/// The Content-Security-Policy for every response: our own scripts and styles only.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Largest request body accepted: a full final exam is a few kilobytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The JSON API: each route with its OpenAPI annotation. Student routes (those that
/// need the cookie) are separated from the rest so `student` wraps only them.
fn api(student_layer: StudentLayer) -> OpenApiRouter<AppState> {
    let mut student = OpenApiRouter::new()
        .routes(routes!(quiz::api_quiz))
        .routes(routes!(quiz::api_submit))
        .routes(routes!(me::progress_json))
        .routes(routes!(playground::view))
        .routes(routes!(playground::allocate))
        .routes(routes!(playground::free))
        .routes(routes!(playground::empty_cache))
        .routes(routes!(playground::reset))
        .routes(routes!(playground::configure))
        .routes(routes!(playground::snapshot));
    for experiment in REGISTRY.iter().copied() {
        student = student.route(
            &format!("/api/experiments/{}", experiment.name()),
            post(
                move |State(state): State<AppState>,
                      Extension(id): Extension<StudentId>,
                      peer: Option<Extension<ConnectInfo<SocketAddr>>>,
                      query: RawQuery,
                      body: Bytes| {
                    let address = peer.map(|Extension(ConnectInfo(p))| p.ip());
                    experiments::submit(experiment, state, id, address, query.0, body)
                },
            ),
        );
    }
    let student = student
        .merge(
            OpenApiRouter::new()
                .routes(routes!(lint::check_json))
                .layer(DefaultBodyLimit::max(lint::MAX_BODY_BYTES)),
        )
        // A run file is larger than any other body: the handler says so past its cap,
        // the framework's 413 only past this.
        .merge(
            OpenApiRouter::new()
                .routes(routes!(gpu_runs::list, gpu_runs::upload))
                .routes(routes!(gpu_runs::remove))
                .layer(DefaultBodyLimit::max(
                    Limits::LEARNER_RUN_MAX_BYTES + 64 * 1024,
                )),
        )
        .routes(routes!(experiments::job))
        .routes(routes!(class_round::current))
        .routes(routes!(class_round::predict));
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(student.route_layer(student_layer))
        .routes(routes!(experiments::device))
        .routes(routes!(experiments::reference_runs))
        .routes(routes!(experiments::doctor))
        .routes(routes!(playground::memory))
        .routes(routes!(openapi::openapi))
}

/// A span and DEBUG lines per request, only when the log filter asks for them (e.g.
/// `RUST_LOG=tower_http=debug`): by default nothing of it would be printed, yet under
/// load on a lesson page its spans, clock reads and body wrapper took about 6% of the
/// server's samples (issue 31). A 5xx is logged where it arises, once per cause (an
/// internal error with its cause; a database that takes no writes once per change of
/// state), so the trace layer's own per-response line is DEBUG, not ERROR.
fn request_tracing<S>() -> Option<
    impl tower::Layer<
        S,
        Service = impl Service<
            Request<Body>,
            Response = Response<Body>,
            Error = S::Error,
            Future = impl Send,
        > + Clone
                  + Send,
    >,
>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send,
    S::Error: std::fmt::Display + 'static,
    S::Future: Send,
{
    tracing::enabled!(target: "tower_http::trace", tracing::Level::DEBUG).then(|| {
        ServiceBuilder::new()
            .map_response(|response: Response<_>| response.map(Body::new))
            .layer(
                TraceLayer::new_for_http()
                    .on_failure(DefaultOnFailure::new().level(tracing::Level::DEBUG)),
            )
            .into_inner()
    })
}

/// The OpenAPI document a server with `limits` serves.
pub fn openapi_document(limits: &Limits) -> serde_json::Value {
    // The layers do not change the document: any policy and budget will do.
    let layer = StudentLayer::new(CookiePolicy::default(), WriteBudget::CookieOnly);
    openapi::finish(api(layer).split_for_parts().1, limits)
}

/// Maps every URL to its handler, behind the layers every response passes through: the
/// service [`serve`](super::serve) runs for each connection.
pub fn router(
    state: AppState,
) -> impl Service<
    Request<Incoming>,
    Response = Response<impl HttpBody<Data = Bytes, Error: Into<BoxError>> + Send + 'static>,
    Error = Infallible,
    Future: Send + 'static,
> + Clone
+ Send
+ Sync
+ 'static {
    let (api, doc) = api(StudentLayer::with_write_budget(&state)).split_for_parts();
    let document = Document(Arc::new(openapi::finish(doc, &state.config.limits)));
    // Only the API's routes get the document (the one that serves it among them), so a
    // page view does not insert it into its request.
    let api = api.layer(Extension(document));
    // Pages know the student (the student layer issues the cookie); static files and the
    // instructor routes do not need to.
    let student_pages = Router::new()
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
        .route("/final-exam/complete", get(learner::completion))
        .route("/labs", get(learner::labs))
        .route(
            "/lint",
            get(lint::page)
                .post(lint::check_form)
                .layer(DefaultBodyLimit::max(lint::MAX_BODY_BYTES)),
        )
        .route("/me/name", post(me::set_name))
        .route("/me/export", get(me::export))
        .route("/me/reset", post(me::reset))
        .route("/me/resume-code", post(resume::make_code))
        .route_layer(StudentLayer::with_write_budget(&state));
    // Resuming has its own guard (wrong codes slowed per address, a right one always
    // taken), so it needs the cookie but not the address's write budget.
    let resume_page = Router::new()
        .route("/me/resume", post(resume::resume))
        .route_layer(StudentLayer::cookie_only(&state));
    let routes = Router::new()
        .merge(api)
        .merge(student_pages)
        .merge(resume_page)
        .route("/about", get(learner::about))
        .route("/search", get(learner::search))
        .route("/lessons/{slug}/code.py", get(learner::lesson_script))
        .route("/lessons/{slug}/code.ipynb", get(learner::lesson_notebook))
        .route("/notebooks/{file}", get(notebooks::download))
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route("/instructor", get(instructor::gradebook))
        .route("/instructor/login", post(instructor::login))
        .route("/instructor/logout", post(instructor::logout))
        .route(
            "/instructor/grades.csv",
            get(instructor_exports::grades_csv),
        )
        .route(
            "/instructor/missed.csv",
            get(instructor_exports::missed_csv),
        )
        .route(
            "/instructor/predictions.csv",
            get(instructor_exports::predictions_csv),
        )
        .route("/instructor/round/open", post(class_round::open))
        .route("/instructor/round/run", post(class_round::run))
        .route("/instructor/round/close", post(class_round::close))
        .route("/instructor/live.json", get(instructor_cockpit::live_json))
        .route(
            "/instructor/students/rename",
            post(instructor_cockpit::rename),
        )
        .route(
            "/instructor/students/merge",
            post(instructor_cockpit::merge),
        )
        .route("/static/{*path}", get(assets::asset))
        .fallback(pages::not_found)
        // Inside the routing so it sees the matched route (MatchedPath).
        .layer(Track::new(Arc::clone(&state.metrics)))
        .with_state(state.clone());
    // The layers every response passes through, wrapped once around the whole router
    // rather than with `Router::layer`: that wraps every route in each layer and boxes
    // it again, and each request clones every box of its route's stack (in a profile of
    // page views under load, malloc and free took about 17% of the samples, much of it
    // under those nested route futures). Listed outermost first.
    ServiceBuilder::new()
        .map_request(|request: Request<Incoming>| request.map(Body::new))
        .option_layer(request_tracing())
        // Dynamic bodies (JSON, per-student pages) are compressed above 1 KiB; pre-encoded
        // pages and assets carry Content-Encoding and pass by untouched (layers.rs).
        .layer(CompressUnencoded::default())
        .layer(SetResponseHeaderLayer::if_not_present(
            HeaderName::from_static("referrer-policy"),
            HeaderValue::from_static("same-origin"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::if_not_present(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        ))
        .layer(UniformRejections)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            state.config.limits.request_timeout(),
        ))
        .service(routes)
}

//! Operations: probes for orchestrators and the Docker HEALTHCHECK, and Prometheus.
//! `/healthz` says the process answers; `/readyz` says it can do its job — the database
//! takes a write — and reports the GPU state and queue without requiring a GPU (the
//! CPU path is a working server); `/metrics` is the exposition, fed by [`track`].

use std::time::Instant;

use axum::Json;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::web::state::AppState;

/// `GET /healthz`: 200 while the process serves requests.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: 200 when the database is writable, else 503 with the reason.
pub async fn readyz(State(state): State<AppState>) -> Response {
    let database = state.db.check_writable().await;
    let stats = state.engine.stats();
    let body = json!({
        "status": if database.is_ok() { "ready" } else { "not ready" },
        "database": match &database {
            Ok(()) => "ok".to_string(),
            Err(e) => format!("not writable: {e}"),
        },
        "gpu": {
            "backend": state.engine.card.kind,
            "device": state.engine.card.name,
            "note": state.engine.card.note,
        },
        "queue": { "depth": stats.depth, "running": stats.running },
    });
    let status = if database.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body)).into_response()
}

/// Middleware: records every request's route, status and latency.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let method = request.method().as_str().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    state.metrics.observe(
        &route,
        &method,
        response.status().as_str(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// `GET /metrics`.
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(),
    )
}

//! Operations: probes for orchestrators and the Docker HEALTHCHECK, and Prometheus.
//! `/healthz` says the process answers; `/readyz` says it can do its job — the database
//! takes a write (`db::health`'s probe, at most once a second: a full disk, a read-only
//! or removed file make it unready until fixed) and the backend passed its start-up
//! self-test — and reports the GPU state and queue without requiring a GPU (the CPU path
//! is a working server); `/metrics` is the exposition, fed by `layers::Track`, with the
//! database's writability read at scrape time.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::web::state::AppState;

/// `GET /healthz`: 200 while the process serves requests.
pub async fn healthz() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok" }))
}

/// `GET /readyz`: 200 when the database is writable and the backend in use passed its
/// start-up self-test, else 503 with the reason. A GPU that failed its self-test does
/// not make the server unready — it runs on the CPU, and `selftest.rejected_gpu` says
/// why.
pub async fn readyz(State(state): State<AppState>) -> Response {
    let database = state.db.writability().await;
    let stats = state.engine.stats().await;
    let contact = &state.engine.first_contact;
    let ready = database.ok() && contact.ok();
    let body = json!({
        "status": if ready { "ready" } else { "not ready" },
        "selftest": {
            "backend": contact.backend,
            "ok": contact.ok(),
            "failed": contact.failed(),
            "checks": contact.checks,
            "rejected_gpu": contact.rejected_gpu,
        },
        "database": database.describe(),
        "gpu": {
            "backend": state.engine.card.kind,
            "device": state.engine.card.name,
            "note": state.engine.card.note,
        },
        "queue": { "depth": stats.depth, "running": stats.running },
    });
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body)).into_response()
}

/// The metrics label for `method`: the standard ones by name, anything else `other`, so
/// a client inventing methods cannot grow the label set (and the server's memory).
pub fn method_label(method: &axum::http::Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "PATCH" => "PATCH",
        "OPTIONS" => "OPTIONS",
        "CONNECT" => "CONNECT",
        "TRACE" => "TRACE",
        _ => "other",
    }
}

/// `GET /metrics`. Rendering reads NVML, which can block: it runs off the async threads.
pub async fn metrics(State(state): State<AppState>) -> Response {
    state.metrics.database(&state.db.writability().await);
    let metrics = state.metrics.clone();
    match tokio::task::spawn_blocking(move || metrics.render()).await {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "metrics could not be read; try again",
        )
            .into_response(),
    }
}

//! Probes for orchestrators and the Docker HEALTHCHECK: `/healthz` says the process
//! answers; `/readyz` says it can do its job — the database takes a write — and reports
//! the GPU state and queue without requiring a GPU (the CPU path is a working server).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::app::AppState;

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

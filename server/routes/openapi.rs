//! `GET /api/openapi.json`: the OpenAPI 3.0 document of every JSON endpoint. The text
//! lives beside this file (`openapi.json`); numbers that are this server's caps are
//! written there as `"@<limit name>"` and filled in from the running configuration, so
//! clients and fuzzers see the bounds the server really enforces.

use axum::Json;
use axum::extract::State;
use serde_json::Value;

use crate::app::AppState;
use crate::gpu::Limits;

/// The document as written, with `@…` placeholders for the caps.
pub const TEMPLATE: &str = include_str!("openapi.json");

/// The document with `limits` filled in.
pub fn document(limits: &Limits) -> Value {
    let mut doc: Value = serde_json::from_str(TEMPLATE).unwrap_or_default();
    fill(&mut doc, limits);
    doc
}

fn cap(name: &str, limits: &Limits) -> Option<u64> {
    Some(match name {
        "max_transfer_bytes" => limits.max_transfer_bytes,
        "max_matmul_size" => limits.max_matmul_size as u64,
        "max_train_steps" => limits.max_train_steps as u64,
        "max_hidden" => limits.max_hidden as u64,
        "max_batch" => crate::gpu::train::DATASET as u64,
        _ => return None,
    })
}

fn fill(value: &mut Value, limits: &Limits) {
    match value {
        Value::String(text) => {
            if let Some(number) = text.strip_prefix('@').and_then(|name| cap(name, limits)) {
                *value = Value::from(number);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| fill(v, limits)),
        Value::Object(map) => map.values_mut().for_each(|v| fill(v, limits)),
        _ => {}
    }
}

/// Serves the document.
pub async fn openapi(State(state): State<AppState>) -> Json<Value> {
    Json(document(&state.engine.limits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_a_known_cap() {
        let doc = document(&Limits::default());
        let text = doc.to_string();
        assert!(!text.contains("\"@"), "unfilled placeholder in {text}");
        let max = &doc["paths"]["/api/experiments/transfer"]["post"]["requestBody"]["content"]["application/json"]
            ["schema"]["properties"]["max_bytes"]["maximum"];
        assert_eq!(max, &Value::from(Limits::default().max_transfer_bytes));
    }
}

//! `GET /api/openapi.json`: the OpenAPI document of every JSON endpoint, generated, not
//! written. Handlers carry `#[utoipa::path]` annotations and the router collects them
//! with the routes it mounts (`utoipa-axum`), so a route cannot be served without being
//! documented; [`finish`] then adds one path per registered experiment with its
//! parameter and result schemas (derived from the Rust types), and fills in this
//! server's caps from each experiment's rules, so clients and fuzzers see the bounds
//! the server really enforces.

use std::sync::Arc;

use axum::Json;
use axum::extract::Extension;
use serde_json::{Map, Value, json};

use crate::config::Limits;
use crate::experiments::{REGISTRY, Rule};

/// The top of the document; paths come from the handlers and the registry.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "GPU Lab API",
        version = "1",
        description = "Live experiments on the server's GPU (or its CPU), the allocator playground, quizzes and the student's progress. Caps below (maximum) are this server's configured limits. Experiments are queued: POST answers 202 with a job id; poll GET /api/jobs/{id} until status is done or failed. Student routes set a `gpulab_student` cookie on first use."
    ),
    components(schemas(
        crate::web::error::ErrorBody,
        crate::web::routes::experiments::Queued,
        crate::engine::provenance::Provenance
    )),
    tags(
        (name = "device", description = "What the server computes on"),
        (name = "experiments", description = "Queued live experiments"),
        (name = "memory", description = "Memory snapshot"),
        (name = "playground", description = "The caching-allocator playground"),
        (name = "quizzes", description = "Quizzes and progress"),
        (name = "lint", description = "The script doctor: a training script checked for the course's pitfalls, never run"),
        (name = "meta", description = "This document")
    )
)]
pub struct ApiDoc;

/// The finished document, shared by the handler.
#[derive(Clone)]
pub struct Document(pub Arc<Value>);

/// This document, with this server's caps.
#[utoipa::path(get, path = "/api/openapi.json", tag = "meta",
    responses((status = 200, description = "OK", body = Object)))]
pub async fn openapi(Extension(document): Extension<Document>) -> Json<Value> {
    Json((*document.0).clone())
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    })
}

/// One experiment's `POST` operation.
fn experiment_path(
    experiment: &dyn crate::experiments::DynExperiment,
    params: &str,
    output: &str,
) -> Value {
    json!({
        "post": {
            "tags": ["experiments"],
            "summary": experiment.summary(),
            "description": format!(
                "Queues the experiment; poll GET /api/jobs/{{id}}. When done, the job's `result` is a `{output}` with a `provenance` (how and where it was measured). Placed in the lesson `{}` by the directive `experiment {}`.",
                experiment.lesson(),
                experiment.directive()
            ),
            "operationId": format!("experiment_{}", experiment.name().replace('-', "_")),
            "parameters": [{
                "name": "predict",
                "in": "query",
                "required": false,
                "description": "The learner's prediction of the measured value (the quantity the panel asks about on this backend, see `predictions` in GET /api/device). When given, the finished result carries `measured` and `prediction` (the score), and the prediction is stored.",
                "schema": {"type": "number", "minimum": 0, "maximum": crate::experiments::prediction::MAX_PREDICTION},
            }],
            "requestBody": {
                "required": false,
                "description": "Every field is optional: a missing one (or no body at all) takes its default, shown in the example; an unknown field is refused with 400, naming it.",
                "content": {"application/json": {
                    "schema": {"$ref": format!("#/components/schemas/{params}")},
                    "example": experiment.defaults(),
                }},
            },
            "responses": {
                "202": {
                    "description": "Queued: poll the job",
                    "headers": {"Location": {"schema": {"type": "string"}}},
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Queued"}}},
                },
                "400": error_response("Not JSON, or not the parameters' shape"),
                "408": error_response("The request took too long"),
                "413": error_response("Body too large"),
                "422": error_response("A parameter outside its bounds (the message names the bound)"),
                "429": {
                    "description": "The queue is full, or, while other students' experiments wait, this student's rate or waiting experiments are used up",
                    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
                },
                "503": {
                    "description": "The server is shutting down, or its database cannot save anything just now (a full disk, a read-only or missing file): nothing was queued",
                    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
                },
            },
        }
    })
}

/// Writes `rules` into the parameters' schema: numeric bounds, and the choices of a
/// plain-string parameter.
fn apply_rules(schema: &mut Value, rules: &[Rule]) {
    let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for rule in rules {
        let Some(property) = properties
            .get_mut(rule.field())
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        match rule {
            Rule::Range { min, max, .. } => {
                property.insert("minimum".into(), json!(min));
                property.insert("maximum".into(), json!(max));
                // A field left out takes its default within this server's bounds
                // (experiments::params::parse), and the document says so.
                if let Some(default) = property.get("default").and_then(Value::as_u64) {
                    property.insert("default".into(), json!(default.clamp(*min, *max)));
                }
            }
            Rule::OneOf { choices, .. } => {
                if !property.contains_key("$ref") && !property.contains_key("enum") {
                    property.insert("enum".into(), json!(choices));
                }
            }
        }
    }
}

/// The document `api` describes, plus every registered experiment, with `limits`.
pub fn finish(api: utoipa::openapi::OpenApi, limits: &Limits) -> Value {
    let mut doc = serde_json::to_value(&api).unwrap_or_default();
    let mut paths = doc["paths"].as_object().cloned().unwrap_or_default();
    let mut schemas: Map<String, Value> = doc["components"]["schemas"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for experiment in REGISTRY {
        let named = experiment.schemas();
        for (name, schema) in &named {
            schemas.insert(
                name.clone(),
                serde_json::to_value(schema).unwrap_or_default(),
            );
        }
        let (params, output) = (&named[0].0, &named[1].0);
        if let Some(schema) = schemas.get_mut(params) {
            apply_rules(schema, &experiment.rules(limits));
        }
        paths.insert(
            format!("/api/experiments/{}", experiment.name()),
            experiment_path(*experiment, params, output),
        );
    }
    for operations in paths.values_mut() {
        for method in ["post", "put", "patch", "delete"] {
            if let Some(responses) = operations
                .get_mut(method)
                .and_then(|op| op.get_mut("responses"))
                .and_then(Value::as_object_mut)
            {
                guarded_write(responses);
            }
        }
    }
    doc["paths"] = Value::Object(paths);
    doc["components"]["schemas"] = Value::Object(schemas);
    doc
}

/// What `web::guard` can answer to any write: 403 without the student cookie, 429 when
/// the address's (or the student's) budget is used up; and what any write can meet: 503
/// while the database cannot save anything (`db::health`).
fn guarded_write(responses: &mut Map<String, Value>) {
    responses.entry("403").or_insert_with(|| {
        error_response("No student cookie came with this write: load a course page first")
    });
    responses.entry("429").or_insert_with(|| {
        json!({
            "description": "A rate limit for this student or network address is used up",
            "headers": {"Retry-After": {"schema": {"type": "integer"}}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        })
    });
    responses.entry("503").or_insert_with(|| {
        json!({
            "description": "The database cannot save anything just now (a full disk, a read-only or missing file): nothing was saved",
            "headers": {"Retry-After": {"schema": {"type": "integer"}}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        })
    });
}

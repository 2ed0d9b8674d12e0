//! The served OpenAPI document is generated from the router and the experiment
//! registry: every operation it lists is really served (answered by its handler, not
//! the 404 fallback or a 405), every registered experiment is listed with its
//! parameter and result schemas, and the caps it advertises are the running server's.

use reqwest::StatusCode;
use serde_json::Value;

use crate::support::spawn_tuned;

/// A path from the document with its parameters filled in.
fn concrete(path: &str) -> String {
    path.replace("{id}", "why-gpus")
        .replace("{name}", "weights")
}

#[tokio::test]
async fn every_documented_operation_is_served_and_every_experiment_documented() {
    let app = spawn_tuned(|config| config.limits.max_matmul_size = 333).await;
    let doc: Value = app.get("/api/openapi.json").await.json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 19, "{:?}", paths.keys());
    let client = crate::support::student();
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            let url = format!("{}{}", app.base, concrete(path));
            let request = match method.as_str() {
                "get" => client.get(&url),
                "post" => client.post(&url).body("{}"),
                "delete" => client.delete(&url),
                other => panic!("{path}: unexpected method {other}"),
            };
            let response = request.send().await.unwrap();
            let status = response.status();
            let json = response
                .headers()
                .get("content-type")
                .is_some_and(|t| t.to_str().unwrap().starts_with("application/json"));
            // JSON, unless the document says this answer is a file (the snapshot pickle).
            let declared = &item[method]["responses"][status.as_str()]["content"];
            let file = declared.get("application/octet-stream").is_some();
            assert!(
                status != StatusCode::METHOD_NOT_ALLOWED && (json || file),
                "{method} {path}: {status}, JSON: {json}"
            );
            let documented = item[method]["responses"]
                .as_object()
                .unwrap()
                .contains_key(status.as_str());
            assert!(
                documented,
                "{method} {path} answered {status}, which is not documented"
            );
        }
    }
    for experiment in gpulab::experiments::REGISTRY {
        let path = format!("/api/experiments/{}", experiment.name());
        let body = &paths[&path]["post"]["requestBody"]["content"]["application/json"];
        let params = body["schema"]["$ref"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap();
        let schema = &doc["components"]["schemas"][params];
        assert_eq!(schema["type"], "object", "{path}");
        assert_eq!(
            schema["additionalProperties"], false,
            "{path}: unknown fields are refused"
        );
        assert!(
            schema
                .get("required")
                .is_none_or(|r| r.as_array().is_some_and(Vec::is_empty)),
            "{path}: every field has a default, so none is required: {schema}"
        );
        assert_eq!(body["example"], experiment.defaults(), "{path}");
    }
    let size_cap = &doc["components"]["schemas"]["PrecisionParams"]["properties"]["size"];
    assert_eq!(size_cap["maximum"], 333);
    assert_eq!(size_cap["minimum"], 64);
    assert_eq!(
        doc["components"]["schemas"]["TransferParams"]["properties"]["max_bytes"]["maximum"],
        app.state.engine.limits.max_transfer_bytes
    );
}

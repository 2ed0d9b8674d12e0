//! The served OpenAPI document matches the router: every `/api/` route registered in
//! `server/app.rs` is documented with the same methods, nothing documented is missing,
//! and the caps it advertises are the running server's.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::support::{spawn_with, test_config};

/// `(path, method)` pairs registered under `/api/` in the router source.
fn routed() -> BTreeSet<(String, String)> {
    let source = include_str!("../server/app.rs");
    let mut pairs = BTreeSet::new();
    for line in source.lines() {
        let Some(rest) = line.trim().strip_prefix(".route(\"/api/") else {
            continue;
        };
        let path = format!("/api/{}", &rest[..rest.find('"').unwrap()]);
        for method in ["get", "post", "delete", "put", "patch"] {
            if rest.contains(&format!("{method}(")) {
                pairs.insert((path.clone(), method.to_string()));
            }
        }
    }
    pairs
}

#[tokio::test]
async fn the_openapi_document_matches_the_router_and_the_caps() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path().join("gpulab.db"));
    config.limits.max_matmul_size = 333;
    let app = spawn_with(config).await;
    let doc: Value = app.get("/api/openapi.json").await.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.0.3");
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| (path.clone(), method.clone()))
        })
        .collect();
    let routes = routed();
    assert!(routes.len() >= 19, "parsed only {routes:?}");
    assert_eq!(documented, routes);
    let size_cap = &doc["paths"]["/api/experiments/precision"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"]["properties"]["size"]["maximum"];
    assert_eq!(size_cap, 333);
}

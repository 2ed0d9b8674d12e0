//! Bad input for every registered experiment, generated from the registry: each
//! route, each parameter's rule (one past either bound, a value outside its choices),
//! values of the wrong type, unknown fields, malformed and oversized bodies. A new
//! experiment is covered the moment it is registered.

use gpulab::experiments::{DynExperiment, REGISTRY, Rule};
use serde_json::{Value, json};

use super::{BAD_VALUES, malformed_bodies};
use crate::support::hostile::{json_error, post_as};
use crate::support::{TestApp, spawn};

fn path(experiment: &dyn DynExperiment) -> String {
    format!("/api/experiments/{}", experiment.name())
}

async fn post_raw(app: &TestApp, path: &str, body: Vec<u8>) -> reqwest::Response {
    post_as(app, path, "application/json", body).await
}

/// The defaults with `field` set to `value`.
fn with(experiment: &dyn DynExperiment, field: &str, value: Value) -> Value {
    let mut body = experiment.defaults();
    body[field] = value;
    body
}

#[tokio::test]
async fn every_rule_refuses_one_past_each_bound_and_names_it() {
    let app = spawn().await;
    let limits = app.state.engine.limits.clone();
    let mut checked = 0;
    for experiment in REGISTRY {
        for rule in experiment.rules(&limits) {
            let mut bad: Vec<(Value, &str)> = Vec::new();
            match &rule {
                Rule::Range { min, max, cap, .. } => {
                    bad.push((
                        json!(max + 1),
                        if *cap { "this server's cap" } else { "between" },
                    ));
                    if *min > 0 {
                        bad.push((json!(min - 1), "between"));
                    }
                }
                Rule::OneOf { choices, .. } => {
                    bad.push((json!("nonsense"), choices[0]));
                    bad.push((json!(choices[0].to_uppercase()), "must be one of"));
                }
            }
            for (value, phrase) in bad {
                let body = with(*experiment, rule.field(), value.clone());
                let context = format!("{} {}={value}", experiment.name(), rule.field());
                let response =
                    post_raw(&app, &path(*experiment), body.to_string().into_bytes()).await;
                let message = json_error(response, &[422], &context).await;
                assert!(
                    message.contains(rule.field()) && message.contains(phrase),
                    "{context}: {message}"
                );
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 12,
        "only {checked} cases: is the registry empty?"
    );
}

#[tokio::test]
async fn wrong_types_and_extreme_numbers_get_a_4xx_never_a_5xx() {
    let app = spawn().await;
    let limits = app.state.engine.limits.clone();
    for experiment in REGISTRY {
        for rule in experiment.rules(&limits) {
            for value in BAD_VALUES {
                let body = with(*experiment, rule.field(), json!("@"))
                    .to_string()
                    .replace("\"@\"", value);
                let context = format!("{} {body}", experiment.name());
                let response = post_raw(&app, &path(*experiment), body.into_bytes()).await;
                json_error(response, &[400, 422], &context).await;
            }
        }
    }
}

#[tokio::test]
async fn malformed_unknown_and_oversized_bodies_are_refused_on_every_experiment() {
    let app = spawn().await;
    let malformed = malformed_bodies();
    for experiment in REGISTRY {
        let path = path(*experiment);
        for body in &malformed {
            let context = format!(
                "{path} {}",
                String::from_utf8_lossy(&body[..body.len().min(20)])
            );
            json_error(post_raw(&app, &path, body.clone()).await, &[400], &context).await;
        }
        let unknown = with(*experiment, "priority", json!(1));
        let message = json_error(
            post_raw(&app, &path, unknown.to_string().into_bytes()).await,
            &[400],
            &path,
        )
        .await;
        assert!(message.contains("unknown field"), "{path}: {message}");
        for size in [64 * 1024 + 1, 1 << 20] {
            let response = post_raw(&app, &path, vec![b' '; size]).await;
            json_error(response, &[413], &format!("{path} {size} B")).await;
        }
    }
}

//! `gpulab bench`: experiments run directly on this machine's backend, outside the
//! queue, printed as tables or as one JSON document with provenance (`bench all
//! --json`: every experiment at its default size, the input for comparisons with
//! reference tools). Parameters come from the command line laid over the defaults and
//! are validated by the same rules as the API, under caps that only a
//! terminal user may lift (it is their own machine).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::backend::{Backend, Ran};
use crate::config::Limits;
use crate::experiments::{DynExperiment, ParamError, REGISTRY};
use crate::gpu::DeviceCard;

/// Generous time limit for a command-line run.
pub const DEADLINE: Duration = Duration::from_secs(900);

/// Caps for runs on one's own machine: the API's lower bounds, and upper caps far above
/// a shared server's (1 TiB copies, 65,536-wide matrices, a million steps).
pub fn local_limits() -> Limits {
    Limits {
        max_transfer_bytes: 1 << 40,
        max_matmul_size: 1 << 16,
        max_train_steps: 1_000_000,
        max_hidden: 1 << 16,
        ..Limits::default()
    }
}

/// Why a bench run produced no result.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The parameters were refused.
    #[error(transparent)]
    Params(#[from] ParamError),
    /// The run failed.
    #[error(transparent)]
    Run(#[from] crate::experiments::ExperimentError),
}

/// Runs `experiment` with `overrides` laid over its defaults.
pub fn run_one(
    backend: &mut Backend,
    card: &DeviceCard,
    experiment: &dyn DynExperiment,
    overrides: &Map<String, Value>,
) -> Result<Ran, BenchError> {
    let mut params = experiment.defaults();
    if let Value::Object(fields) = &mut params {
        fields.extend(overrides.clone());
    }
    let job = experiment.prepare(Some(&params), &local_limits())?;
    Ok(backend.run(card, job, DEADLINE)?)
}

/// Every experiment at its defaults, as one JSON document: the machine, then each
/// experiment's parameters and result (with provenance) or its error. `progress` is
/// told each experiment's name before it runs.
pub fn run_all(progress: impl Fn(&str)) -> Value {
    let (mut backend, card, _) = Backend::open();
    let experiments: Vec<Value> = REGISTRY
        .iter()
        .map(|experiment| {
            progress(experiment.name());
            let outcome = run_one(&mut backend, &card, *experiment, &Map::new());
            let mut entry = json!({
                "name": experiment.name(),
                "params": experiment.defaults(),
            });
            match outcome {
                Ok(ran) => entry["result"] = ran.outcome.to_json(),
                Err(error) => entry["error"] = json!(error.to_string()),
            }
            entry
        })
        .collect();
    json!({
        "gpulab_version": env!("CARGO_PKG_VERSION"),
        "generated_at_unix": SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        "device": card,
        "experiments": experiments,
    })
}

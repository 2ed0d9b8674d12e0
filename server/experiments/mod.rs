//! The live experiments, each one module implementing [`Experiment`], and the
//! [`REGISTRY`] that lists them. Everything that used to be written once per
//! experiment comes from here:
//!
//! - the routes `POST /api/experiments/{NAME}` and their OpenAPI paths and schemas
//!   (web layer), with the caps from [`Experiment::rules`] filled in;
//! - `gpulab bench NAME` and `gpulab bench all --json` (their flags come from the
//!   parameters' defaults and doc comments);
//! - the lesson directive `experiment DIRECTIVE`: its parameter keys, defaults and the
//!   no-JavaScript fallback;
//! - the panel's input bounds and defaults, served in `/api/device`;
//! - the bad-input test cases (each rule's out-of-range values);
//! - `gpulab selftest`'s checks.
//!
//! Beside them: [`trace`] (a run's timeline as a Chrome trace, inside each result) and
//! [`ceilings`] (this device's measured ceilings, taken once per server start).
//!
//! Adding an experiment: its module here, one line in [`REGISTRY`], its JS panel
//! (`web/static/js/experiments/DIRECTIVE.js`), its lesson text and its test.

pub mod break_it;
pub mod ceilings;
pub mod labs;
pub mod launch;
pub mod matmul;
pub mod params;
pub mod precision;
pub mod prediction;
#[cfg(test)]
mod prediction_gpu_tests;
pub mod selftest;
pub mod streams;
pub mod timing;
pub mod trace;
pub mod training;
pub mod transfer;

use std::convert::Infallible;
use std::fmt::Debug;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::Limits;
use crate::db::lab_attempts::LabAttempt;
use crate::gpu::{Gpu, GpuError};
use crate::measure::{Deadline, PastDeadline};
pub use params::{ParamError, Rule};
pub use prediction::{Measured, Quantity};
pub use selftest::{Check, Outcome};

/// What a student's parameters must be: JSON in and out, a schema for OpenAPI, and
/// defaults (the directive's, the CLI's and the panel's).
pub trait Params:
    DeserializeOwned + Serialize + utoipa::ToSchema + Default + Clone + Debug + Send + Sync + 'static
{
}
impl<T> Params for T where
    T: DeserializeOwned
        + Serialize
        + utoipa::ToSchema
        + Default
        + Clone
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// One live experiment.
pub trait Experiment: Send + Sync + 'static {
    /// The API and CLI name: `POST /api/experiments/{NAME}`, `gpulab bench NAME`.
    const NAME: &'static str;
    /// The lesson directive (`experiment DIRECTIVE`) and its panel's module name.
    const DIRECTIVE: &'static str;
    /// The slug of the lesson it belongs to.
    const LESSON: &'static str;
    /// The caption above its panel.
    const TITLE: &'static str;
    /// One line for the OpenAPI document and `gpulab bench --help`.
    const SUMMARY: &'static str;
    /// What a student may set.
    type Params: Params;
    /// What a run returns (the job result, before its provenance is added).
    type Output: Serialize + utoipa::ToSchema + Send + 'static;

    /// Bounds on the parameters under this server's caps: the single source of the
    /// validation messages, the OpenAPI bounds, the panel's inputs and the bad-input
    /// tests.
    fn rules(limits: &Limits) -> Vec<Rule>;
    /// Checks no single rule can state (e.g. `log_every <= steps`).
    fn check(_params: &Self::Params, _limits: &Limits) -> Result<(), ParamError> {
        Ok(())
    }
    /// How it is measured, for the result's provenance.
    fn method(params: &Self::Params) -> String;
    /// Runs on the GPU.
    fn run_gpu(
        gpu: &mut Gpu,
        params: &Self::Params,
        deadline: &Deadline,
    ) -> Result<Self::Output, ExperimentError>;
    /// Runs the CPU stand-in (the backend when the server has no GPU).
    fn run_cpu(params: &Self::Params, deadline: &Deadline)
    -> Result<Self::Output, ExperimentError>;
    /// The result as a table for a terminal (`gpulab bench NAME`).
    fn table(params: &Self::Params, output: &Self::Output) -> String;
    /// What the panel does, in a sentence or two: the no-JavaScript fallback.
    fn describe(params: &Self::Params) -> String;
    /// Small, fast cases that compare this experiment's answers with a reference.
    fn selftest(gpu: Option<&mut Gpu>) -> Vec<Check>;
    /// The numbers a learner may predict before a run; the first that applies to the
    /// parameters and the backend is asked (its question is course content).
    const PREDICT: &'static [Quantity] = &[];
    /// Sizes in bytes the experiment uses that no parameter holds (the smallest copy of a
    /// sweep, say). With the `*_bytes` parameters they are the sizes a lesson may name
    /// when it describes the experiment, and `gpulab check` holds the lesson's unit words
    /// to them (`1 KB` is not 1,024 bytes).
    const SIZE_BOUNDS: &'static [u64] = &[];
    /// The measured value of the quantity `key` (one of [`Experiment::PREDICT`]) in
    /// `output`, when this run measured it.
    fn measure(_key: &str, _params: &Self::Params, _output: &Self::Output) -> Option<f64> {
        None
    }
    /// The graded tuning-lab attempt `output` makes, for the gradebook (only the labs
    /// grade one).
    fn lab_attempt(_output: &Self::Output) -> Option<LabAttempt> {
        None
    }
}

/// Why an experiment stopped without a result; the text is what the student reads.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The job's time limit passed.
    #[error(transparent)]
    PastDeadline(#[from] PastDeadline),
    /// The GPU failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// Something the experiment itself could not do.
    #[error("{0}")]
    Failed(String),
}

impl From<Infallible> for ExperimentError {
    fn from(never: Infallible) -> Self {
        match never {}
    }
}

/// A finished run, typed inside, JSON and a table outside.
pub trait Finished: Send {
    /// The result as the API returns it (before provenance).
    fn json(&self) -> Value;
    /// The result as `gpulab bench` prints it.
    fn table(&self) -> String;
    /// The value a learner predicted for this run, read off the result.
    fn measured(&self, on_gpu: bool) -> Option<Measured>;
    /// The graded tuning-lab attempt this run makes, if it is a lab's.
    fn lab_attempt(&self) -> Option<LabAttempt>;
}

struct Typed<E: Experiment> {
    params: E::Params,
    output: E::Output,
}

impl<E: Experiment> Finished for Typed<E> {
    fn json(&self) -> Value {
        serde_json::to_value(&self.output).unwrap_or_default()
    }

    fn table(&self) -> String {
        E::table(&self.params, &self.output)
    }

    fn measured(&self, on_gpu: bool) -> Option<Measured> {
        let params = serde_json::to_value(&self.params).unwrap_or_default();
        let quantity = prediction::pick(E::PREDICT, &params, on_gpu)?;
        let value = E::measure(quantity.key, &self.params, &self.output)?;
        value.is_finite().then_some(Measured {
            quantity: quantity.key,
            value,
            unit: quantity.unit,
            scale: quantity.scale,
        })
    }

    fn lab_attempt(&self) -> Option<LabAttempt> {
        E::lab_attempt(&self.output)
    }
}

type RunFn =
    dyn FnOnce(Option<&mut Gpu>, &Deadline) -> Result<Box<dyn Finished>, ExperimentError> + Send;

/// A validated request, ready to run on the GPU or the CPU.
pub struct Job {
    /// The experiment's name.
    pub experiment: &'static str,
    /// The parameters as validated.
    pub params: Value,
    /// How it is measured (provenance).
    pub method: String,
    /// The learner's prediction of the measured value, when they made one.
    pub prediction: Option<f64>,
    run: Box<RunFn>,
}

impl Job {
    /// Runs on `gpu` when given, else on the CPU.
    pub fn run(
        self,
        gpu: Option<&mut Gpu>,
        deadline: &Deadline,
    ) -> Result<Box<dyn Finished>, ExperimentError> {
        (self.run)(gpu, deadline)
    }

    /// A job that runs `run` instead of a registered experiment (engine tests).
    #[cfg(test)]
    pub(crate) fn from_fn(
        run: impl FnOnce(Option<&mut Gpu>, &Deadline) -> Result<Box<dyn Finished>, ExperimentError>
        + Send
        + 'static,
    ) -> Self {
        Self {
            experiment: "test",
            params: Value::Null,
            method: "test".into(),
            prediction: None,
            run: Box::new(run),
        }
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("experiment", &self.experiment)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// An experiment seen through JSON: what the registry holds.
pub trait DynExperiment: Send + Sync {
    /// [`Experiment::NAME`].
    fn name(&self) -> &'static str;
    /// [`Experiment::DIRECTIVE`].
    fn directive(&self) -> &'static str;
    /// [`Experiment::LESSON`].
    fn lesson(&self) -> &'static str;
    /// [`Experiment::TITLE`].
    fn title(&self) -> &'static str;
    /// [`Experiment::SUMMARY`].
    fn summary(&self) -> &'static str;
    /// The default parameters as a JSON object.
    fn defaults(&self) -> Value;
    /// [`Experiment::rules`].
    fn rules(&self, limits: &Limits) -> Vec<Rule>;
    /// Parses and validates a JSON body (`None`: no body) into a job.
    fn prepare(&self, body: Option<&Value>, limits: &Limits) -> Result<Job, ParamError>;
    /// The no-JavaScript description for these parameters (overlaid on the defaults).
    fn describe(&self, overrides: &serde_json::Map<String, Value>) -> Result<String, ParamError>;
    /// The parameters' and the output's OpenAPI schemas, with their names, in that
    /// order, followed by every schema they refer to.
    fn schemas(
        &self,
    ) -> Vec<(
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    )>;
    /// [`Experiment::selftest`].
    fn selftest(&self, gpu: Option<&mut Gpu>) -> Vec<Check>;
    /// [`Experiment::PREDICT`].
    fn quantities(&self) -> &'static [Quantity];
    /// [`Experiment::SIZE_BOUNDS`].
    fn size_bounds(&self) -> &'static [u64];
}

/// Adapts a typed [`Experiment`] to [`DynExperiment`].
pub struct Registered<E>(PhantomData<E>);

impl<E> Registered<E> {
    /// The registry entry.
    pub const ENTRY: Self = Self(PhantomData);
}

impl<E: Experiment> DynExperiment for Registered<E> {
    fn name(&self) -> &'static str {
        E::NAME
    }
    fn directive(&self) -> &'static str {
        E::DIRECTIVE
    }
    fn lesson(&self) -> &'static str {
        E::LESSON
    }
    fn title(&self) -> &'static str {
        E::TITLE
    }
    fn summary(&self) -> &'static str {
        E::SUMMARY
    }

    fn defaults(&self) -> Value {
        serde_json::to_value(E::Params::default()).unwrap_or_default()
    }

    fn rules(&self, limits: &Limits) -> Vec<Rule> {
        E::rules(limits)
    }

    fn prepare(&self, body: Option<&Value>, limits: &Limits) -> Result<Job, ParamError> {
        let params: E::Params = params::parse(body, &E::rules(limits), &self.defaults())?;
        params::check_rules(&params, &E::rules(limits))?;
        E::check(&params, limits)?;
        let method = E::method(&params);
        let value = serde_json::to_value(&params).unwrap_or_default();
        Ok(Job {
            experiment: E::NAME,
            params: value,
            method,
            prediction: None,
            run: Box::new(move |gpu, deadline| {
                let output = match gpu {
                    Some(gpu) => E::run_gpu(gpu, &params, deadline)?,
                    None => E::run_cpu(&params, deadline)?,
                };
                Ok(Box::new(Typed::<E> { params, output }) as Box<dyn Finished>)
            }),
        })
    }

    fn describe(&self, overrides: &serde_json::Map<String, Value>) -> Result<String, ParamError> {
        let params: E::Params = params::overlay(&self.defaults(), overrides)?;
        Ok(E::describe(&params))
    }

    fn schemas(
        &self,
    ) -> Vec<(
        String,
        utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
    )> {
        use utoipa::{PartialSchema, ToSchema};
        let mut schemas = vec![
            (E::Params::name().into_owned(), E::Params::schema()),
            (E::Output::name().into_owned(), E::Output::schema()),
        ];
        E::Params::schemas(&mut schemas);
        E::Output::schemas(&mut schemas);
        schemas
    }

    fn selftest(&self, gpu: Option<&mut Gpu>) -> Vec<Check> {
        E::selftest(gpu)
    }

    fn quantities(&self) -> &'static [Quantity] {
        E::PREDICT
    }

    fn size_bounds(&self) -> &'static [u64] {
        E::SIZE_BOUNDS
    }
}

/// Every live experiment, in course order. The one list.
pub static REGISTRY: &[&dyn DynExperiment] = &[
    &Registered::<matmul::Matmul>::ENTRY,
    &Registered::<transfer::Transfer>::ENTRY,
    &Registered::<timing::Timing>::ENTRY,
    &Registered::<launch::Launch>::ENTRY,
    &Registered::<streams::Streams>::ENTRY,
    &Registered::<training::Training>::ENTRY,
    &Registered::<precision::Precision>::ENTRY,
    &Registered::<break_it::BreakIt>::ENTRY,
    &Registered::<labs::Labs>::ENTRY,
];

/// The registered experiment called `name`.
pub fn find(name: &str) -> Option<&'static dyn DynExperiment> {
    REGISTRY.iter().copied().find(|e| e.name() == name)
}

/// The registered experiment placed by directive `directive`.
pub fn by_directive(directive: &str) -> Option<&'static dyn DynExperiment> {
    REGISTRY
        .iter()
        .copied()
        .find(|e| e.directive() == directive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_directives_are_unique_and_defaults_are_valid() {
        let limits = Limits::default();
        for (i, e) in REGISTRY.iter().enumerate() {
            for other in &REGISTRY[i + 1..] {
                assert_ne!(e.name(), other.name());
                assert_ne!(e.directive(), other.directive());
            }
            assert!(e.defaults().is_object(), "{}", e.name());
            let job = e.prepare(Some(&e.defaults()), &limits).unwrap();
            assert_eq!(job.experiment, e.name());
            assert!(!job.method.is_empty());
            for rule in e.rules(&limits) {
                assert!(
                    e.defaults().get(rule.field()).is_some(),
                    "{}: rule on unknown field {}",
                    e.name(),
                    rule.field()
                );
            }
        }
    }

    /// A body of `fields` only.
    fn body(fields: &[(&String, Value)]) -> Value {
        Value::Object(
            fields
                .iter()
                .map(|(k, v)| ((*k).clone(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn a_missing_field_takes_its_default_and_an_unknown_one_is_named() {
        let limits = Limits::default();
        for e in REGISTRY {
            let (name, defaults) = (e.name(), e.defaults());
            for given in [None, Some(body(&[]))] {
                let job = e
                    .prepare(given.as_ref(), &limits)
                    .unwrap_or_else(|err| panic!("{name} {given:?}: {err}"));
                assert_eq!(job.params, defaults, "{name} {given:?}");
            }
            let rules = e.rules(&limits);
            for (field, default) in defaults.as_object().unwrap() {
                let same = e.prepare(Some(&body(&[(field, default.clone())])), &limits);
                assert_eq!(same.unwrap().params, defaults, "{name}.{field}");
                let lowest = rules.iter().find_map(|r| match r {
                    Rule::Range { field: f, min, .. } if *f == field.as_str() => Some(*min),
                    _ => None,
                });
                // A partial body: the field given, every other its default (or a
                // cross-field check refuses the mix, with a 422's message).
                if let Some(min) = lowest {
                    match e.prepare(Some(&body(&[(field, Value::from(min))])), &limits) {
                        Ok(job) => {
                            let mut expected = defaults.clone();
                            expected[field.as_str()] = Value::from(min);
                            assert_eq!(job.params, expected, "{name}.{field}={min}");
                        }
                        Err(err) => assert!(
                            matches!(err, ParamError::Invalid(_)),
                            "{name}.{field}={min}: {err}"
                        ),
                    }
                }
                let wrong = e.prepare(Some(&body(&[(field, serde_json::json!([1]))])), &limits);
                assert!(
                    matches!(wrong, Err(ParamError::Malformed { .. })),
                    "{name}.{field}=[1]: {:?}",
                    wrong.err()
                );
            }
            let warp = String::from("warp_size");
            let unknown = e.prepare(Some(&body(&[(&warp, Value::from(32))])), &limits);
            let message = unknown.err().map(|err| err.to_string()).unwrap_or_default();
            assert!(
                message.contains("unknown field `warp_size`"),
                "{name}: {message}"
            );
            let (_, schema) = e.schemas().swap_remove(0);
            let schema = serde_json::to_value(schema).unwrap();
            assert!(
                schema["required"].as_array().is_none_or(Vec::is_empty),
                "{name}: no field is required, every one has a default: {schema}"
            );
        }
    }
}

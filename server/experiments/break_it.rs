//! Experiment: "break it on purpose" (lesson 9), two cases.
//!
//! - `batch-on-host`: the model's weights go to the server's device while the batch is
//!   left in host memory, as when a training loop forgets `to_device(batch)`. Before any
//!   forward pass, a preflight asks the CUDA driver where every buffer really lives
//!   (`cuPointerGetAttribute`; ordinary host memory is unknown to the driver) and names
//!   the fields on the wrong device and the call that fixes it, instead of the raw
//!   PyTorch error the lesson shows. On the CPU backend everything lives in host memory,
//!   so the preflight passes and the result says why.
//! - `log-every-step`: the same training run twice, reading the loss every step and
//!   every 50 steps, with step time and samples/s of each.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked, no_gpu};
use super::training::model::{CLASSES, FEATURES, Mlp, Tickets};
use super::training::{self, Optim, TrainParams, TrainPrecision};
use super::{Experiment, ExperimentError, Rule};
use crate::config::Limits;
use crate::gpu::Gpu;
use crate::measure::{Deadline, Summary};

/// Batch size of both cases.
pub const BATCH: usize = 32;
/// Steps of each training run in `log-every-step`.
pub const LOG_STEPS: usize = 100;
/// The sparse logging interval compared with every step.
pub const SPARSE_EVERY: usize = 50;

/// Which mistake.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Case {
    /// The batch is left in host memory while the model is on the GPU.
    #[default]
    BatchOnHost,
    /// The loss is read to the host every step.
    LogEveryStep,
}

/// What the student asks for.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BreakItParams {
    /// `batch-on-host` or `log-every-step`.
    pub case: Case,
}

/// Where one buffer of the batch lives.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct FieldPlacement {
    /// Field name in the batch.
    pub name: &'static str,
    /// `cuda:0` or `cpu`, as the driver reports it.
    pub device: String,
    /// Tensor shape.
    pub shape: Vec<usize>,
    /// Size in bytes.
    pub bytes: usize,
    /// Whether it is where the model is.
    pub on_model_device: bool,
}

/// The `batch-on-host` result.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PlacementResult {
    /// `batch-on-host`.
    pub case: &'static str,
    /// Where the weights are.
    pub model_device: String,
    /// Each parameter tensor and batch field, with where the driver says it is.
    pub fields: Vec<FieldPlacement>,
    /// The preflight's message when something is on the wrong device.
    pub preflight_error: Option<String>,
    /// What PyTorch raises when the forward pass meets a CPU batch and a CUDA model.
    pub pytorch_error: &'static str,
    /// The fix.
    pub fix: &'static str,
    /// What this run shows on this backend.
    pub note: String,
}

/// One logging style in `log-every-step`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LoggingRun {
    /// The loss was read every this many steps.
    pub log_every: usize,
    /// Milliseconds per step.
    pub step_ms: Summary,
    /// Training throughput.
    pub samples_per_sec: f64,
    /// How many times the loss was copied to the host.
    pub loss_reads: usize,
}

/// The `log-every-step` result.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct LoggingResult {
    /// `log-every-step`.
    pub case: &'static str,
    /// Every step, then every 50.
    pub runs: Vec<LoggingRun>,
    /// Median step time logging every step ÷ logging every 50 (above 1: logging every
    /// step is slower).
    pub slowdown: f64,
}

/// Either case's result.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum BreakItResult {
    /// `batch-on-host`.
    Placement(PlacementResult),
    /// `log-every-step`.
    Logging(LoggingResult),
}

/// PyTorch's message for this mistake, in recent releases' wording (the dispatcher's device
/// check in `adaption.cpp`; older releases said "found at least two devices, cuda:0 and cpu!").
pub const PYTORCH_ERROR: &str = "RuntimeError: Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors on cuda:0 (when checking argument in method wrapper_CUDA_addmm)";
const FIX: &str = "batch = to_device(batch, device)  # move every field before model(batch)";

/// The preflight: fields not on `model_device`, as the lesson's helper words it.
pub fn preflight(model_device: &str, fields: &[FieldPlacement]) -> Option<String> {
    let wrong: Vec<String> = fields
        .iter()
        .filter(|f| !f.on_model_device)
        .map(|f| format!("'{}' ({})", f.name, f.device))
        .collect();
    (!wrong.is_empty()).then(|| {
        format!(
            "batch fields not on {model_device}: [{}]; call to_device() first",
            wrong.join(", ")
        )
    })
}

fn placement(
    name: &'static str,
    device: String,
    model_device: &str,
    shape: Vec<usize>,
    elem: usize,
) -> FieldPlacement {
    FieldPlacement {
        name,
        on_model_device: device == model_device,
        device,
        bytes: shape.iter().product::<usize>() * elem,
        shape,
    }
}

/// Runs `batch-on-host` on the GPU (`Some`) or the CPU backend.
pub fn run_placement(gpu: Option<&mut Gpu>) -> Result<PlacementResult, ExperimentError> {
    let data = Tickets::generate();
    let (x, y) = data.batch(0, BATCH);
    let model = Mlp::init(64);
    let h = model.hidden;
    let (model_device, fields, note) = match gpu {
        Some(gpu) => {
            let stream = gpu.stream().clone();
            let (w1, w2) = (stream.upload(&model.w1)?, stream.upload(&model.w2)?);
            // Where fc1.weight lives is where the model lives.
            let model_device = gpu.location_of_device(&w1)?;
            let fields = vec![
                placement(
                    "fc1.weight",
                    model_device.clone(),
                    &model_device,
                    vec![h, FEATURES],
                    4,
                ),
                placement(
                    "fc2.weight",
                    gpu.location_of_device(&w2)?,
                    &model_device,
                    vec![CLASSES, h],
                    4,
                ),
                placement(
                    "features",
                    gpu.location_of_host(&x)?,
                    &model_device,
                    vec![BATCH, FEATURES],
                    4,
                ),
                placement(
                    "labels",
                    gpu.location_of_host(&y)?,
                    &model_device,
                    vec![BATCH],
                    8,
                ),
            ];
            (model_device, fields, "The weights were copied to the GPU and the batch was left in host memory on purpose; the driver was asked where each buffer lives.".to_string())
        }
        None => {
            let cpu = "cpu".to_string();
            let fields = vec![
                placement("fc1.weight", cpu.clone(), &cpu, vec![h, FEATURES], 4),
                placement("fc2.weight", cpu.clone(), &cpu, vec![CLASSES, h], 4),
                placement("features", cpu.clone(), &cpu, vec![BATCH, FEATURES], 4),
                placement("labels", cpu.clone(), &cpu, vec![BATCH], 8),
            ];
            (cpu, fields, "This server has no GPU: the model and the batch both live in host memory, so nothing is on the wrong device and the preflight passes. On a GPU server the model would be on cuda:0 and this preflight would name 'features' and 'labels'.".to_string())
        }
    };
    Ok(PlacementResult {
        case: "batch-on-host",
        preflight_error: preflight(&model_device, &fields),
        model_device,
        fields,
        pytorch_error: PYTORCH_ERROR,
        fix: FIX,
        note,
    })
}

/// Runs `log-every-step` on the GPU (`Some`) or the CPU: the training run twice.
pub fn run_logging(
    mut gpu: Option<&mut Gpu>,
    deadline: &Deadline,
) -> Result<LoggingResult, ExperimentError> {
    let mut runs = Vec::new();
    for log_every in [1, SPARSE_EVERY] {
        deadline.check()?;
        let params = TrainParams {
            batch: BATCH,
            hidden: 128,
            steps: LOG_STEPS,
            log_every,
            precision: TrainPrecision::Fp32,
            optimizer: Optim::Adam,
        };
        let result = training::train(gpu.as_deref_mut(), &params, deadline)?;
        runs.push(LoggingRun {
            log_every,
            step_ms: result.step_ms,
            samples_per_sec: result.samples_per_sec,
            loss_reads: result.loss_curve.len(),
        });
    }
    let slowdown = runs[0].step_ms.median / runs[1].step_ms.median;
    Ok(LoggingResult {
        case: "log-every-step",
        runs,
        slowdown,
    })
}

/// The experiment.
pub struct BreakIt;

impl Experiment for BreakIt {
    const NAME: &'static str = "break-it";
    const DIRECTIVE: &'static str = "break-it";
    const LESSON: &'static str = "slow-or-broken";
    const TITLE: &'static str = "Break it on purpose";
    const SUMMARY: &'static str =
        "Lesson 9's deliberate mistakes: a batch left on the host, or the loss read every step";
    type Params = BreakItParams;
    type Output = BreakItResult;

    const PREDICT: &'static [Quantity] = &[
        Quantity {
            key: "break-it.fails",
            unit: "",
            scale: Scale::Exact,
            on: On::Any,
            when: Some(("case", "batch-on-host")),
        },
        Quantity {
            key: "break-it.log_slowdown",
            unit: "×",
            scale: Scale::Ratio,
            on: On::Any,
            when: Some(("case", "log-every-step")),
        },
    ];

    fn measure(key: &str, _: &BreakItParams, r: &BreakItResult) -> Option<f64> {
        match (key, r) {
            // 1: the preflight found the batch on another device than the model.
            ("break-it.fails", BreakItResult::Placement(p)) => {
                Some(if p.preflight_error.is_some() {
                    1.0
                } else {
                    0.0
                })
            }
            ("break-it.log_slowdown", BreakItResult::Logging(l)) => Some(l.slowdown),
            _ => None,
        }
    }

    fn rules(_: &Limits) -> Vec<Rule> {
        vec![Rule::OneOf {
            field: "case",
            choices: &["batch-on-host", "log-every-step"],
        }]
    }

    fn method(p: &BreakItParams) -> String {
        match p.case {
            Case::BatchOnHost => "weights copied to the device, batch left in host memory; each buffer's location asked of the CUDA driver (cuPointerGetAttribute) before any forward pass".to_string(),
            Case::LogEveryStep => format!(
                "the training run (batch {BATCH}, hidden 128, Adam, FP32, {LOG_STEPS} steps) twice: reading the loss to the host every step, then every {SPARSE_EVERY}; step time and samples/s as in the training run"
            ),
        }
    }

    fn run_gpu(
        gpu: &mut Gpu,
        p: &BreakItParams,
        deadline: &Deadline,
    ) -> Result<BreakItResult, ExperimentError> {
        Ok(match p.case {
            Case::BatchOnHost => BreakItResult::Placement(run_placement(Some(gpu))?),
            Case::LogEveryStep => BreakItResult::Logging(run_logging(Some(gpu), deadline)?),
        })
    }

    fn run_cpu(p: &BreakItParams, deadline: &Deadline) -> Result<BreakItResult, ExperimentError> {
        Ok(match p.case {
            Case::BatchOnHost => BreakItResult::Placement(run_placement(None)?),
            Case::LogEveryStep => BreakItResult::Logging(run_logging(None, deadline)?),
        })
    }

    fn table(_: &BreakItParams, result: &BreakItResult) -> String {
        let mut out = String::new();
        match result {
            BreakItResult::Placement(r) => {
                let _ = writeln!(out, "model on {}", r.model_device);
                let _ = writeln!(
                    out,
                    "{:<12}  {:<8}  {:<10}  {:>8}",
                    "field", "device", "shape", "bytes"
                );
                for f in &r.fields {
                    let shape = format!("{:?}", f.shape);
                    let _ = writeln!(
                        out,
                        "{:<12}  {:<8}  {:<10}  {:>8}",
                        f.name, f.device, shape, f.bytes
                    );
                }
                let _ = writeln!(
                    out,
                    "preflight: {}",
                    r.preflight_error.as_deref().unwrap_or("passed")
                );
                let _ = writeln!(out, "fix: {}\n{}", r.fix, r.note);
            }
            BreakItResult::Logging(r) => {
                let _ = writeln!(
                    out,
                    "{:>10}  {:>10}  {:>12}  {:>10}",
                    "log every", "ms/step", "samples/s", "loss reads"
                );
                for run in &r.runs {
                    let _ = writeln!(
                        out,
                        "{:>10}  {:>10.3}  {:>12.0}  {:>10}",
                        run.log_every, run.step_ms.median, run.samples_per_sec, run.loss_reads
                    );
                }
                let (a, b) = (r.runs[0].step_ms, r.runs[1].step_ms);
                if crate::spread::measurably_different(a.median, a.q3 - a.q1, b.median, b.q3 - b.q1)
                {
                    let _ = writeln!(
                        out,
                        "reading the loss every step makes the median step {:.2}× as long as reading it every {SPARSE_EVERY}",
                        r.slowdown
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "no measurable difference: the median steps ({:.3} and {:.3} ms) differ by less than the runs' spread",
                        a.median, b.median
                    );
                }
            }
        }
        out
    }

    fn describe(p: &BreakItParams) -> String {
        match p.case {
            Case::LogEveryStep => "Trains the same model twice: once reading the loss every step, once every 50 steps, and reports the measured slowdown of the first.".to_string(),
            Case::BatchOnHost => "Starts a training run with the batch left in host memory. The server's preflight check stops it before the first step and returns the readable error.".to_string(),
        }
    }

    fn selftest(gpu: Option<&mut Gpu>) -> Vec<Check> {
        let mut checks = vec![checked(
            "break-it: on the CPU nothing is on the wrong device",
            run_placement(None),
            |r| {
                (
                    r.preflight_error.is_none() && r.fields.iter().all(|f| f.on_model_device),
                    format!("model on {}", r.model_device),
                )
            },
        )];
        match gpu {
            Some(gpu) => checks.push(checked(
                "break-it: the driver places the weights on cuda:0 and the batch on the host",
                run_placement(Some(gpu)),
                |r| {
                    let wrong: Vec<&str> = r
                        .fields
                        .iter()
                        .filter(|f| !f.on_model_device)
                        .map(|f| f.name)
                        .collect();
                    (
                        r.model_device == "cuda:0" && wrong == ["features", "labels"],
                        format!("model on {}, misplaced {wrong:?}", r.model_device),
                    )
                },
            )),
            None => checks.push(no_gpu(
                "break-it: the driver's view of device and host buffers",
            )),
        }
        checks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_preflight_names_the_fields_on_the_wrong_device() {
        let model = "cuda:0";
        let fields = vec![
            placement("fc1.weight", "cuda:0".into(), model, vec![64, 32], 4),
            placement("features", "cpu".into(), model, vec![32, 32], 4),
            placement("labels", "cpu".into(), model, vec![32], 8),
        ];
        assert_eq!(
            preflight(model, &fields).unwrap(),
            "batch fields not on cuda:0: ['features' (cpu), 'labels' (cpu)]; call to_device() first"
        );
        assert_eq!(fields[1].bytes, 32 * 32 * 4);
        assert!(preflight("cpu", &[placement("x", "cpu".into(), "cpu", vec![1], 4)]).is_none());
    }

    #[test]
    fn on_the_cpu_backend_everything_is_on_the_cpu() {
        let r = run_placement(None).unwrap();
        assert_eq!(r.model_device, "cpu");
        assert!(r.fields.iter().all(|f| f.on_model_device));
        assert!(r.preflight_error.is_none());
        assert!(r.pytorch_error.contains("same device"));
    }

    #[test]
    fn the_logging_case_trains_twice_and_counts_the_reads() {
        let r = run_logging(None, &Deadline::after(Duration::from_secs(120))).unwrap();
        assert_eq!(r.runs[0].loss_reads, LOG_STEPS);
        assert_eq!(r.runs[1].loss_reads, LOG_STEPS / SPARSE_EVERY);
        assert!(r.slowdown > 0.0 && r.runs.iter().all(|run| run.samples_per_sec > 0.0));
    }
}

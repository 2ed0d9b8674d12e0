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

use std::time::Instant;

use cudarc::driver::sys::{CUmemorytype, CUpointer_attribute, CUresult, cuPointerGetAttribute};
use cudarc::driver::{CudaSlice, DevicePtr};
use serde::{Deserialize, Serialize};

use super::cuda::CudaHandle;
use super::stats::Summary;
use super::train::{self, FEATURES, Mlp, Tickets, TrainParams};

/// The two cases, as named in the lesson's directives.
pub const CASES: [&str; 2] = ["batch-on-host", "log-every-step"];
/// Batch size of both cases.
pub const BATCH: usize = 32;
/// Steps of each training run in `log-every-step`.
pub const LOG_STEPS: usize = 100;
/// The sparse logging interval compared with every step.
pub const SPARSE_EVERY: usize = 50;

/// What the student asks for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakItParams {
    /// `batch-on-host` or `log-every-step`.
    pub case: String,
}

impl BreakItParams {
    /// Checks the case name.
    pub fn validate(&self) -> Result<(), String> {
        if CASES.contains(&self.case.as_str()) {
            Ok(())
        } else {
            Err(format!("case must be one of {}", CASES.join(", ")))
        }
    }
}

/// Where one buffer of the batch lives.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct LoggingResult {
    /// `log-every-step`.
    pub case: &'static str,
    /// Every step, then every 50.
    pub runs: Vec<LoggingRun>,
    /// Median step time logging every step ÷ logging every 50 (above 1: logging every
    /// step is slower).
    pub slowdown: f64,
}

/// PyTorch's message for this mistake (PyTorch 2.x wording).
pub const PYTORCH_ERROR: &str = "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_CUDA_addmm)";
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

/// Where the driver says `address` lives: `cuda:0` for device memory, `cpu` otherwise.
fn driver_location(gpu: &CudaHandle, address: u64) -> Result<String, String> {
    gpu.ctx.bind_to_thread().map_err(|e| e.to_string())?;
    let mut kind: u32 = 0;
    // SAFETY: CU_POINTER_ATTRIBUTE_MEMORY_TYPE writes one unsigned int to `data`, which
    // points at `kind`; the context is current on this thread (bound above). For host
    // memory the driver never allocated, it returns an error and writes nothing.
    let status = unsafe {
        cuPointerGetAttribute(
            (&raw mut kind).cast(),
            CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            address,
        )
    };
    let device =
        status == CUresult::CUDA_SUCCESS && kind == CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;
    Ok(if device {
        "cuda:0".into()
    } else {
        "cpu".into()
    })
}

/// Runs `batch-on-host` on the GPU (`Some`) or the CPU backend.
pub fn run_placement(gpu: Option<&mut CudaHandle>) -> Result<PlacementResult, String> {
    let data = Tickets::generate();
    let (x, y) = data.batch(0, BATCH);
    let model = Mlp::init(64);
    let h = model.hidden;
    let (model_device, fields, note) = match gpu {
        Some(gpu) => {
            let stream = gpu.stream.clone();
            let up = |v: &Vec<f32>| stream.clone_htod(v).map_err(|e| e.to_string());
            let weights: [CudaSlice<f32>; 2] = [up(&model.w1)?, up(&model.w2)?];
            let addr = |s: &CudaSlice<f32>| s.device_ptr(&stream).0;
            // Where fc1.weight lives is where the model lives.
            let model_device = driver_location(gpu, addr(&weights[0]))?;
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
                    driver_location(gpu, addr(&weights[1]))?,
                    &model_device,
                    vec![train::CLASSES, h],
                    4,
                ),
                placement(
                    "features",
                    driver_location(gpu, x.as_ptr() as u64)?,
                    &model_device,
                    vec![BATCH, FEATURES],
                    4,
                ),
                placement(
                    "labels",
                    driver_location(gpu, y.as_ptr() as u64)?,
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
                placement("fc2.weight", cpu.clone(), &cpu, vec![train::CLASSES, h], 4),
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

/// Runs `log-every-step` with `train` (the GPU or CPU training run).
pub fn run_logging(
    mut train: impl FnMut(&TrainParams) -> Result<train::TrainResult, String>,
    deadline: Instant,
) -> Result<LoggingResult, String> {
    let mut runs = Vec::new();
    for log_every in [1, SPARSE_EVERY] {
        super::check_deadline(
            deadline,
            "the experiment ran past its time limit and was stopped",
        )?;
        let params = TrainParams {
            batch: BATCH,
            hidden: 128,
            steps: LOG_STEPS,
            log_every,
            precision: "fp32".into(),
            optimizer: "adam".into(),
        };
        let result = train(&params)?;
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
        let deadline = Instant::now() + Duration::from_secs(120);
        let r = run_logging(|p| train::run_cpu(p, deadline), deadline).unwrap();
        assert_eq!(r.runs[0].loss_reads, LOG_STEPS);
        assert_eq!(r.runs[1].loss_reads, LOG_STEPS / SPARSE_EVERY);
        assert!(r.slowdown > 0.0 && r.runs.iter().all(|run| run.samples_per_sec > 0.0));
    }
}

//! The layered GPU check (`gpulab doctor`, `/api/doctor`, lesson 3's live experiment):
//! does the driver library load, does NVML see devices, can a context be created (and
//! which NVML device is it), does NVRTC load and compile every kernel, does the
//! *driver load* what NVRTC compiled (a PTX newer than the driver compiles fine and
//! fails only here), does cuBLAS load and create a handle. Each layer passes, fails
//! with the underlying error text and the library's path and version, or is skipped
//! because a layer below it failed. The server uses the GPU only when every required
//! layer passes. NVML is *advisory*: the device card's clocks, link and process list
//! come from it, but no experiment needs it, and a container started without the
//! `utility` driver capability has CUDA and no NVML — it still computes on the GPU.

use serde::Serialize;

use super::card::DeviceKind;
use super::error::{DriverContext, GpuError};
use super::launch::Kernels;
use super::loader::{driver_version, guarded, require_driver};
use super::nvml::NvmlDevice;
use super::{cublas, kernels, nvrtc};

/// The outcome of one layer.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Works.
    Ok,
    /// Broken; `detail` says how.
    Failed,
    /// Not tried because a layer it needs failed.
    Skipped,
}

/// One layer of the check.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Layer {
    /// What was checked.
    pub name: &'static str,
    /// The outcome.
    pub status: Status,
    /// What was seen, or the error.
    pub detail: String,
    /// True for a layer the GPU backend does not need (NVML): its failure costs the
    /// card some figures, never the GPU.
    pub advisory: bool,
}

/// The whole check.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Report {
    /// Layers in order, lowest first.
    pub layers: Vec<Layer>,
    /// The backend the server uses as a result: `cuda` or `cpu`.
    pub backend: DeviceKind,
    /// One sentence a newcomer can act on.
    pub verdict: String,
}

fn layer(name: &'static str, result: Result<String, GpuError>) -> Layer {
    match result {
        Ok(detail) => Layer {
            name,
            status: Status::Ok,
            detail,
            advisory: false,
        },
        Err(error) => Layer {
            name,
            status: Status::Failed,
            detail: error.to_string(),
            advisory: false,
        },
    }
}

fn skipped(name: &'static str, because: &str) -> Layer {
    Layer {
        name,
        status: Status::Skipped,
        detail: format!("skipped: {because}"),
        advisory: false,
    }
}

/// `cuda` when every required (not advisory) layer passed, else `cpu`.
pub fn backend_for(layers: &[Layer]) -> DeviceKind {
    if layers
        .iter()
        .filter(|l| !l.advisory)
        .all(|l| l.status == Status::Ok)
    {
        DeviceKind::Cuda
    } else {
        DeviceKind::Cpu
    }
}

/// The sentence a newcomer acts on: the first broken required layer, or that all is
/// well (with what a failed advisory layer costs).
pub fn verdict_for(layers: &[Layer], has_context: bool) -> String {
    let required = layers
        .iter()
        .find(|l| !l.advisory && l.status == Status::Failed);
    let advisory = layers
        .iter()
        .find(|l| l.advisory && l.status == Status::Failed);
    match (required, advisory) {
        (None, None) => "Everything works: experiments run on the GPU.".to_string(),
        (None, Some(nvml)) => format!(
            "Experiments run on the GPU. `{}` is advisory and failed, so the device card lacks NVML's clocks, PCIe link and process list (in a container, add `utility` to NVIDIA_DRIVER_CAPABILITIES): {}",
            nvml.name, nvml.detail
        ),
        (Some(first), _) if has_context => format!(
            "The GPU is there, but `{}` failed, so every experiment runs on the CPU (GPU Lab never runs half on a GPU): {}",
            first.name, first.detail
        ),
        (Some(first), _) => format!(
            "No usable GPU: the first broken layer is `{}`. Experiments run on the CPU instead: {}",
            first.name, first.detail
        ),
    }
}

/// Runs every layer. Never panics, whatever is installed.
pub fn run() -> Report {
    let mut layers = Vec::new();
    let driver = require_driver();
    let driver_ok = driver.is_ok();
    layers.push(layer(
        "CUDA driver library loads",
        driver.map(|()| match driver_version() {
            Some(v) => format!(
                "libcuda found; the driver supports CUDA {}.{}",
                v / 1000,
                (v % 1000) / 10
            ),
            None => "libcuda found".to_string(),
        }),
    ));
    layers.push(Layer {
        advisory: true,
        ..layer("NVML sees GPUs", nvml_devices())
    });
    let context = if driver_ok {
        guarded(|| cudarc::driver::CudaContext::new(0))
            .and_then(|r| r.what("context creation failed"))
    } else {
        Err(GpuError::Unsupported("no driver".into()))
    };
    let cc = context
        .as_ref()
        .ok()
        .and_then(|ctx| ctx.compute_capability().ok());
    match (&context, driver_ok) {
        (Ok(ctx), _) => layers.push(layer(
            "CUDA context on device 0",
            Ok(format!(
                "{} (compute capability {}); NVML: {}",
                ctx.name().unwrap_or_default(),
                cc.map_or("?".into(), |(a, b)| format!("{a}.{b}")),
                NvmlDevice::matching(ctx).map_or("no NVML device matches it".into(), |d| {
                    format!("matched by {}", d.matched_by)
                })
            )),
        )),
        (Err(e), true) => layers.push(layer(
            "CUDA context on device 0",
            Err(GpuError::Unsupported(e.to_string())),
        )),
        (Err(_), false) => layers.push(skipped(
            "CUDA context on device 0",
            "no usable driver library",
        )),
    }
    let nvrtc = nvrtc::get();
    layers.push(layer(
        "NVRTC loads",
        nvrtc
            .as_ref()
            .map(|n| format!("{}; compiles for {}", n.describe(), n.supported_range()))
            .map_err(reissue),
    ));
    let target = nvrtc.as_ref().map_err(reissue).and_then(|n| {
        let (major, minor) = cc.unwrap_or((8, 0));
        n.target_for(major, minor)
    });
    match &target {
        Ok(target) => layers.push(layer(
            "NVRTC compiles every kernel",
            kernels::compile_all(*target).map(|files| {
                format!(
                    "{} files ({}) as {}{}",
                    files.len(),
                    files
                        .iter()
                        .map(|(name, _)| *name)
                        .collect::<Vec<_>>()
                        .join(", "),
                    target.describe(),
                    if cc.is_none() {
                        " (no GPU: sm_80 as an example)"
                    } else {
                        ""
                    }
                )
            }),
        )),
        Err(e) if nvrtc.is_ok() => {
            layers.push(layer("NVRTC compiles every kernel", Err(reissue(e))))
        }
        Err(_) => layers.push(skipped("NVRTC compiles every kernel", "NVRTC did not load")),
    }
    match (&context, &target) {
        (Ok(ctx), Ok(target)) => layers.push(layer(
            "The driver loads every kernel",
            Kernels::load(ctx, *target).map(|_| {
                format!(
                    "every module loaded and every function found ({})",
                    target.describe()
                )
            }),
        )),
        (Err(_), _) => layers.push(skipped("The driver loads every kernel", "no CUDA context")),
        (_, Err(_)) => layers.push(skipped(
            "The driver loads every kernel",
            "nothing was compiled",
        )),
    }
    let cublas = cublas::get().and_then(|api| match &context {
        Ok(ctx) => {
            let stream = ctx.default_stream();
            // SAFETY: the default stream of a live context, kept alive (`stream`) for as
            // long as the handle, which is dropped at the end of this closure.
            let handle = guarded(|| unsafe { cublas::Handle::new(stream.cu_stream().cast()) })??;
            drop(handle);
            Ok(format!("{}; handle created", api.describe()))
        }
        Err(_) => Ok(format!(
            "{} (no context to create a handle in)",
            api.describe()
        )),
    });
    layers.push(layer("cuBLAS loads", cublas));
    Report {
        backend: backend_for(&layers),
        verdict: verdict_for(&layers, context.is_ok()),
        layers,
    }
}

/// The stored error of a library that failed to load, again.
fn reissue(error: &GpuError) -> GpuError {
    GpuError::Unsupported(error.to_string())
}

fn nvml_devices() -> Result<String, GpuError> {
    let nvml = super::nvml::start()
        .map_err(|e| GpuError::Unsupported(format!("NVML could not start: {e}")))?;
    let count = nvml
        .device_count()
        .map_err(|e| GpuError::Unsupported(format!("NVML device count failed: {e}")))?;
    let names: Vec<String> = (0..count)
        .filter_map(|i| nvml.device_by_index(i).ok()?.name().ok())
        .collect();
    if count == 0 {
        Err(GpuError::Unsupported("NVML sees no GPU".into()))
    } else {
        Ok(format!("{count} device(s): {}", names.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_doctor_reports_every_layer_without_panicking() {
        let report = run();
        assert_eq!(report.layers.len(), 7);
        assert!(report.layers.iter().all(|l| !l.detail.is_empty()));
        if !report.backend.is_cuda() {
            assert!(
                report.verdict.contains("first broken layer"),
                "{}",
                report.verdict
            );
        }
        let advisory: Vec<&str> = report
            .layers
            .iter()
            .filter(|l| l.advisory)
            .map(|l| l.name)
            .collect();
        assert_eq!(advisory, ["NVML sees GPUs"]);
    }

    fn fake(name: &'static str, status: Status, advisory: bool) -> Layer {
        Layer {
            name,
            status,
            detail: format!("{name} detail"),
            advisory,
        }
    }

    #[test]
    fn nvml_failing_alone_keeps_the_gpu_and_says_what_it_costs() {
        let layers = vec![
            fake("CUDA driver library loads", Status::Ok, false),
            fake("NVML sees GPUs", Status::Failed, true),
            fake("CUDA context on device 0", Status::Ok, false),
        ];
        assert_eq!(backend_for(&layers), DeviceKind::Cuda);
        let verdict = verdict_for(&layers, true);
        assert!(
            verdict.starts_with("Experiments run on the GPU"),
            "{verdict}"
        );
        assert!(
            verdict.contains("advisory") && verdict.contains("utility"),
            "{verdict}"
        );
    }

    #[test]
    fn a_required_layer_failing_means_the_cpu_and_names_it() {
        let layers = vec![
            fake("CUDA driver library loads", Status::Failed, false),
            fake("NVML sees GPUs", Status::Ok, true),
            fake("CUDA context on device 0", Status::Skipped, false),
        ];
        assert_eq!(backend_for(&layers), DeviceKind::Cpu);
        let verdict = verdict_for(&layers, false);
        assert!(verdict.contains("`CUDA driver library loads`"), "{verdict}");
        assert!(
            verdict.contains("CUDA driver library loads detail"),
            "{verdict}"
        );
    }
}

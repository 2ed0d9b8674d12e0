//! The layered GPU check (`gpulab doctor`, `/api/doctor`, lesson 3's live experiment):
//! does the driver library load, does NVML see devices, can a context be created, does
//! NVRTC compile a kernel, does cuBLAS load. Each layer passes, fails with the
//! underlying error text, or is skipped because a layer below it failed.

use serde::Serialize;

use super::error::{DriverContext, GpuError};
use super::kernels;
use super::loader::{Library, guarded};

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
}

/// The whole check.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Report {
    /// Layers in order, lowest first.
    pub layers: Vec<Layer>,
    /// The backend the server uses as a result: `cuda` or `cpu`.
    pub backend: &'static str,
    /// One sentence a newcomer can act on.
    pub verdict: String,
}

fn layer(name: &'static str, result: Result<String, GpuError>) -> Layer {
    match result {
        Ok(detail) => Layer {
            name,
            status: Status::Ok,
            detail,
        },
        Err(error) => Layer {
            name,
            status: Status::Failed,
            detail: error.to_string(),
        },
    }
}

fn skipped(name: &'static str, because: &str) -> Layer {
    Layer {
        name,
        status: Status::Skipped,
        detail: format!("skipped: {because}"),
    }
}

/// Runs every layer. Never panics, whatever is installed.
pub fn run() -> Report {
    let mut layers = Vec::new();
    let driver_ok = Library::Driver.is_present();
    layers.push(layer(
        "CUDA driver library loads",
        Library::Driver
            .require()
            .map(|()| "libcuda.so found".to_string()),
    ));
    layers.push(layer("NVML sees GPUs", nvml_devices()));
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
                "{} (compute capability {})",
                ctx.name().unwrap_or_default(),
                cc.map_or("?".into(), |(a, b)| format!("{a}.{b}"))
            )),
        )),
        (Err(e), true) => layers.push(Layer {
            name: "CUDA context on device 0",
            status: Status::Failed,
            detail: e.to_string(),
        }),
        (Err(_), false) => layers.push(skipped(
            "CUDA context on device 0",
            "the driver library is missing",
        )),
    }
    let arch = cc
        .and_then(|(a, b)| kernels::arch_for(a, b))
        .unwrap_or("compute_80");
    let test_kernel = &kernels::FILES[0];
    layers.push(layer(
        "NVRTC compiles a kernel",
        kernels::compile(test_kernel, arch)
            .map(|_| format!("compiled {} for {arch}", test_kernel.name)),
    ));
    let cublas = match (Library::Cublas.require(), &context) {
        (Err(missing), _) => Err(missing),
        (Ok(()), Ok(ctx)) => {
            let stream = ctx.default_stream();
            guarded(|| cudarc::cublas::CudaBlas::new(stream)).and_then(|r| {
                r.map(|_| "cuBLAS handle created".to_string())
                    .map_err(|source| GpuError::Blas {
                        what: "handle creation".into(),
                        source,
                    })
            })
        }
        (Ok(()), Err(_)) => Ok("libcublas.so found (no context to create a handle in)".to_string()),
    };
    layers.push(layer("cuBLAS loads", cublas));
    let backend = if context.is_ok() { "cuda" } else { "cpu" };
    let verdict = match layers.iter().find(|l| l.status == Status::Failed) {
        None => "Everything works: experiments run on the GPU.".to_string(),
        Some(first) if backend == "cuda" => format!(
            "The GPU works, but `{}` failed, so some experiments cannot run on it: {}",
            first.name, first.detail
        ),
        Some(first) => format!(
            "No usable GPU: the first broken layer is `{}`. Experiments run on the CPU instead.",
            first.name
        ),
    };
    Report {
        layers,
        backend,
        verdict,
    }
}

fn nvml_devices() -> Result<String, GpuError> {
    let nvml = guarded(nvml_wrapper::Nvml::init)?
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
        assert_eq!(report.layers.len(), 5);
        assert!(report.layers.iter().all(|l| !l.detail.is_empty()));
        if report.backend == "cpu" {
            assert!(
                report.verdict.contains("first broken layer"),
                "{}",
                report.verdict
            );
        }
    }
}

//! Where a result came from, stamped on every result: the backend and device, the
//! driver and link, how busy the GPU was with other processes, how it was measured, and
//! how long the job took. A result without its provenance is a number without a unit.

use serde::Serialize;

use crate::gpu::{DeviceCard, DeviceKind};

/// The provenance of a result (`result.provenance`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Provenance {
    /// `cuda` or `cpu`.
    pub backend: DeviceKind,
    /// Device (or CPU) name.
    pub device: String,
    /// NVIDIA driver version, GPU only.
    pub driver_version: Option<String>,
    /// CUDA version the driver supports, GPU only.
    pub cuda_version: Option<String>,
    /// PCIe generation and width as `gen4 x16`, GPU only.
    pub pcie: Option<String>,
    /// Maximum SM clock in MHz, GPU only.
    pub sm_clock_max_mhz: Option<u32>,
    /// Other processes on the GPU when the job started (NVML), GPU only.
    pub other_gpu_processes: Option<usize>,
    /// How it was measured.
    pub method: String,
    /// Wall time the job took, in seconds.
    pub seconds: f64,
    /// The queue worker that ran it (absent outside the queue: `gpulab bench`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
}

impl Provenance {
    /// The provenance of a job that ran on `card`.
    pub fn new(
        card: &DeviceCard,
        other_gpu_processes: Option<usize>,
        method: String,
        seconds: f64,
    ) -> Self {
        Self {
            backend: card.kind,
            device: card.name.clone(),
            driver_version: card.driver_version.clone(),
            cuda_version: card.cuda_driver_version.clone(),
            pcie: card
                .pcie
                .as_ref()
                .map(|p| format!("gen{} x{}", p.generation, p.width)),
            sm_clock_max_mhz: card.sm_clock_max_mhz,
            other_gpu_processes,
            method,
            seconds,
            worker: None,
        }
    }
}

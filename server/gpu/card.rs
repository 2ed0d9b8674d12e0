//! The device card: what this server computes on. On a GPU host it combines NVML
//! (name, memory, clocks, PCIe link, driver) with the CUDA driver API (compute
//! capability, SM count, L2); on any host it describes the CPU (`crate::host`). The JSON
//! shape is the same with or without a GPU: `kind` says which.

use std::sync::Arc;

use cudarc::driver::CudaContext;
use cudarc::driver::sys::CUdevice_attribute;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::Clock;
use serde::Serialize;

use crate::host::{CpuInfo, cpu_info};

/// The PCIe link between host and GPU.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PcieLink {
    /// Current generation (links train down when idle).
    pub generation: u32,
    /// Current lane count.
    pub width: u32,
    /// Best generation the link supports.
    pub max_generation: u32,
    /// Most lanes the link supports.
    pub max_width: u32,
    /// Theoretical one-direction peak at the max generation and width, in GB/s (1e9).
    pub peak_gbps: f64,
}

/// What the experiments run on.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DeviceCard {
    /// `cuda` or `cpu`.
    pub kind: &'static str,
    /// GPU name, or the CPU model on the CPU backend.
    pub name: String,
    /// `major.minor`, GPU only.
    pub compute_capability: Option<String>,
    /// Streaming multiprocessors, GPU only.
    pub sm_count: Option<u32>,
    /// Device memory in bytes, GPU only.
    pub memory_total_bytes: Option<u64>,
    /// L2 cache in bytes, GPU only.
    pub l2_cache_bytes: Option<u64>,
    /// Maximum SM clock in MHz, GPU only.
    pub sm_clock_max_mhz: Option<u32>,
    /// Maximum memory clock in MHz, GPU only.
    pub memory_clock_max_mhz: Option<u32>,
    /// The PCIe link, GPU only.
    pub pcie: Option<PcieLink>,
    /// NVIDIA driver version, GPU only.
    pub driver_version: Option<String>,
    /// Highest CUDA version the driver supports, GPU only.
    pub cuda_driver_version: Option<String>,
    /// The host CPU.
    pub cpu: CpuInfo,
    /// One sentence for the banner: why this backend.
    pub note: String,
}

/// One-direction PCIe bandwidth per lane in GB/s, after line encoding.
pub fn pcie_lane_gbps(generation: u32) -> f64 {
    match generation {
        1 => 2.5 * 0.8 / 8.0,
        2 => 5.0 * 0.8 / 8.0,
        3 => 8.0 * 128.0 / 130.0 / 8.0,
        4 => 16.0 * 128.0 / 130.0 / 8.0,
        5 => 32.0 * 128.0 / 130.0 / 8.0,
        6 => 64.0 * 242.0 / 256.0 / 8.0,
        _ => 0.0,
    }
}

/// The card for the CPU backend, with the reason no GPU is used.
pub fn cpu_card(reason: &str) -> DeviceCard {
    let cpu = cpu_info();
    DeviceCard {
        kind: "cpu",
        name: cpu.model.clone(),
        compute_capability: None,
        sm_count: None,
        memory_total_bytes: None,
        l2_cache_bytes: None,
        sm_clock_max_mhz: None,
        memory_clock_max_mhz: None,
        pcie: None,
        driver_version: None,
        cuda_driver_version: None,
        cpu,
        note: format!("No GPU in use ({reason}): experiments run on the CPU and say so."),
    }
}

/// The card of an open context, from the driver API and (when it loads) NVML.
pub(super) fn read_card(
    ctx: &Arc<CudaContext>,
    nvml: Option<&Nvml>,
    major: i32,
    minor: i32,
) -> DeviceCard {
    let attr = |a| ctx.attribute(a).ok().and_then(|v| u32::try_from(v).ok());
    let device = nvml.and_then(|n| n.device_by_index(0).ok());
    let pcie = device.as_ref().and_then(|d| {
        let (generation, width) = (
            d.current_pcie_link_gen().ok()?,
            d.current_pcie_link_width().ok()?,
        );
        let (max_generation, max_width) = (
            d.max_pcie_link_gen().unwrap_or(generation),
            d.max_pcie_link_width().unwrap_or(width),
        );
        Some(PcieLink {
            generation,
            width,
            max_generation,
            max_width,
            peak_gbps: pcie_lane_gbps(max_generation) * f64::from(max_width),
        })
    });
    let cuda_version = nvml
        .and_then(|n| n.sys_cuda_driver_version().ok())
        .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
    DeviceCard {
        kind: "cuda",
        name: ctx.name().unwrap_or_else(|_| "NVIDIA GPU".to_string()),
        compute_capability: Some(format!("{major}.{minor}")),
        sm_count: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        memory_total_bytes: ctx.total_mem().ok().map(|b| b as u64),
        l2_cache_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map(u64::from),
        sm_clock_max_mhz: device
            .as_ref()
            .and_then(|d| d.max_clock_info(Clock::SM).ok()),
        memory_clock_max_mhz: device
            .as_ref()
            .and_then(|d| d.max_clock_info(Clock::Memory).ok()),
        pcie,
        driver_version: nvml.and_then(|n| n.sys_driver_version().ok()),
        cuda_driver_version: cuda_version,
        cpu: cpu_info(),
        note: "Experiments run on this GPU, one at a time.".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcie_peaks_match_the_course_figures() {
        // PCIe 4.0 x16 ~32 GB/s and 5.0 x16 ~64 GB/s per direction (lesson 4).
        assert!((pcie_lane_gbps(4) * 16.0 - 31.5).abs() < 0.1);
        assert!((pcie_lane_gbps(5) * 16.0 - 63.0).abs() < 0.1);
        assert_eq!(pcie_lane_gbps(0), 0.0);
    }

    #[test]
    fn the_cpu_card_describes_this_machine() {
        let card = cpu_card("test");
        assert_eq!(card.kind, "cpu");
        assert!(card.cpu.logical_cores >= 1);
        assert!(!card.name.is_empty());
        assert!(card.note.contains("CPU"));
    }
}

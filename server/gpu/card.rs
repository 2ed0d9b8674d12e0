//! The device card: what this server computes on. On a GPU host it combines NVML
//! (name, memory, clocks, PCIe link, driver) with the CUDA driver API (compute
//! capability, SM count, L2); on any host it describes the CPU from `/proc`. The JSON
//! shape is the same with or without a GPU: `kind` says which.

use serde::Serialize;

/// The machine's CPU, always reported.
#[derive(Debug, Clone, Serialize)]
pub struct CpuInfo {
    /// Model name from `/proc/cpuinfo` (or the architecture when unknown).
    pub model: String,
    /// Logical cores this process may use.
    pub logical_cores: usize,
    /// Total RAM in bytes, from `/proc/meminfo`, if readable.
    pub memory_total_bytes: Option<u64>,
}

/// The PCIe link between host and GPU.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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

/// Reads the host CPU's description.
pub fn cpu_info() -> CpuInfo {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| format!("{} CPU", std::env::consts::ARCH));
    let memory_total_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
                .map(|kib| kib * 1024)
        });
    CpuInfo {
        model,
        logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_total_bytes,
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

//! The device card: what this server computes on. On a GPU host it combines NVML
//! (name, memory, clocks, PCIe link, driver) with the CUDA driver API (compute
//! capability, SM count, L2); on any host it describes the CPU (`crate::host`). The JSON
//! shape is the same with or without a GPU: `kind` says which.

use std::sync::Arc;

use cudarc::driver::CudaContext;
use cudarc::driver::sys::CUdevice_attribute;
use serde::Serialize;

use super::nvml::NvmlDevice;
use crate::host::{CpuInfo, cpu_info};

/// The PCIe link between host and GPU.
#[derive(Debug, Clone, Serialize, serde::Deserialize, utoipa::ToSchema)]
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

/// Which backend computes: the GPU through CUDA, or the CPU stand-in. Stored and sent
/// as `cuda` or `cpu`; any other stored name reads as the CPU.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase", from = "String")]
pub enum DeviceKind {
    /// An NVIDIA GPU through CUDA.
    Cuda,
    /// The CPU stand-in.
    #[default]
    Cpu,
}

impl DeviceKind {
    /// `cuda` or `cpu`, as stored, sent and shown in provenance.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cuda => "cuda",
            Self::Cpu => "cpu",
        }
    }

    /// The kind a stored name stands for (`cuda`, else the CPU).
    pub fn named(name: &str) -> Self {
        if name == "cuda" {
            Self::Cuda
        } else {
            Self::Cpu
        }
    }

    /// Whether this is the GPU.
    pub fn is_cuda(self) -> bool {
        self == Self::Cuda
    }

    /// What a page calls it: `GPU` or `CPU`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Cuda => "GPU",
            Self::Cpu => "CPU",
        }
    }
}

impl From<String> for DeviceKind {
    fn from(name: String) -> Self {
        Self::named(&name)
    }
}

impl std::fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the experiments run on (read back from the database on a web node, where the
/// workers registered theirs).
#[derive(Debug, Clone, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct DeviceCard {
    /// `cuda` or `cpu`.
    pub kind: DeviceKind,
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
    /// Maximum SM clock in MHz (NVML), GPU only.
    pub sm_clock_max_mhz: Option<u32>,
    /// The SM clock the datasheet's peak TFLOP/s assume, when GPU Lab knows the model
    /// (on H100 SXM it is 1,830 MHz, about 8% below NVML's maximum).
    pub datasheet_clock_mhz: Option<u32>,
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
        kind: DeviceKind::Cpu,
        name: cpu.model.clone(),
        compute_capability: None,
        sm_count: None,
        memory_total_bytes: None,
        l2_cache_bytes: None,
        sm_clock_max_mhz: None,
        datasheet_clock_mhz: None,
        memory_clock_max_mhz: None,
        pcie: None,
        driver_version: None,
        cuda_driver_version: None,
        cpu,
        note: format!("No GPU in use ({reason}): experiments run on the CPU and say so."),
    }
}

/// The SM clock (MHz) behind the datasheet's dense tensor peaks, for models whose
/// datasheet peak is not NVML's maximum clock: peak ÷ (SMs × FLOP per clock per SM).
/// H100 SXM and H200: 989.4 TFLOP/s FP16 ÷ (132 × 4,096) = 1,830 MHz; H100 PCIe:
/// 756 TFLOP/s ÷ (114 × 4,096) = 1,620 MHz (NVIDIA H100 and H200 datasheets).
pub fn datasheet_clock_mhz(name: &str, sm_count: Option<u32>) -> Option<u32> {
    let name = name.to_ascii_uppercase();
    match sm_count? {
        132 if name.contains("H100") && (name.contains("SXM") || name.contains("HBM3")) => {
            Some(1830)
        }
        132 if name.contains("H200") => Some(1830),
        114 if name.contains("H100") && name.contains("PCIE") => Some(1620),
        _ => None,
    }
}

/// The SM clock (MHz) behind the datasheet's FP32 peak on CUDA cores, which NVIDIA
/// quotes at a higher clock than the tensor-core figures: peak ÷ (SMs × 256 FLOP per
/// clock per SM). H100 SXM and H200: 67 TFLOP/s ÷ (132 × 256) = 1,980 MHz (so FP32 is
/// 67, not the 61.8 the tensor clock would give); H100 PCIe: 51 TFLOP/s ÷ (114 × 256)
/// ≈ 1,755 MHz (NVIDIA H100 and H200 datasheets).
pub fn datasheet_cuda_core_clock_mhz(name: &str, sm_count: Option<u32>) -> Option<u32> {
    match datasheet_clock_mhz(name, sm_count)? {
        1830 => Some(1980),
        1620 => Some(1755),
        _ => None,
    }
}

/// The card of an open context, from the driver API and (when it matched) NVML.
pub(super) fn read_card(
    ctx: &Arc<CudaContext>,
    nvml: Option<&NvmlDevice>,
    major: i32,
    minor: i32,
) -> DeviceCard {
    let attr = |a| ctx.attribute(a).ok().and_then(|v| u32::try_from(v).ok());
    let pcie =
        nvml.and_then(NvmlDevice::pcie)
            .map(|(generation, width, max_generation, max_width)| PcieLink {
                generation,
                width,
                max_generation,
                max_width,
                peak_gbps: pcie_lane_gbps(max_generation) * f64::from(max_width),
            });
    let (sm_clock, memory_clock) = nvml.map_or((None, None), NvmlDevice::max_clocks);
    let (driver_version, cuda_driver_version) = nvml.map_or((None, None), NvmlDevice::driver);
    let name = ctx.name().unwrap_or_else(|_| "NVIDIA GPU".to_string());
    let sm_count = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    DeviceCard {
        kind: DeviceKind::Cuda,
        compute_capability: Some(format!("{major}.{minor}")),
        datasheet_clock_mhz: datasheet_clock_mhz(&name, sm_count),
        name,
        sm_count,
        memory_total_bytes: ctx.total_mem().ok().map(|b| b as u64),
        l2_cache_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).map(u64::from),
        sm_clock_max_mhz: sm_clock,
        memory_clock_max_mhz: memory_clock,
        pcie,
        driver_version,
        cuda_driver_version,
        cpu: cpu_info(),
        note: match nvml.and_then(|n| super::nvml::mig_note(n.uuid())) {
            Some(mig) => format!("Experiments run on this GPU, one at a time. {mig}"),
            None => "Experiments run on this GPU, one at a time.".to_string(),
        },
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
    fn datasheet_clocks_reproduce_the_datasheet_peaks() {
        let fp16_peak = |mhz: u32, sms: u32| f64::from(mhz) * 1e6 * f64::from(sms) * 4096.0 / 1e12;
        let sxm = datasheet_clock_mhz("NVIDIA H100 80GB HBM3", Some(132)).unwrap();
        assert!((fp16_peak(sxm, 132) - 989.4).abs() < 1.0);
        let pcie = datasheet_clock_mhz("NVIDIA H100 PCIe", Some(114)).unwrap();
        assert!((fp16_peak(pcie, 114) - 756.0).abs() < 1.0);
        assert_eq!(datasheet_clock_mhz("NVIDIA H200", Some(132)), Some(1830));
        assert_eq!(
            datasheet_clock_mhz("NVIDIA A100-SXM4-80GB", Some(108)),
            None
        );
        assert_eq!(datasheet_clock_mhz("NVIDIA H100 80GB HBM3", None), None);
    }

    #[test]
    fn the_fp32_peak_uses_its_own_datasheet_clock() {
        let fp32_peak = |mhz: u32, sms: u32| f64::from(mhz) * 1e6 * f64::from(sms) * 256.0 / 1e12;
        let sxm = datasheet_cuda_core_clock_mhz("NVIDIA H100 80GB HBM3", Some(132)).unwrap();
        assert!(
            (fp32_peak(sxm, 132) - 67.0).abs() < 0.5,
            "{}",
            fp32_peak(sxm, 132)
        );
        let h200 = datasheet_cuda_core_clock_mhz("NVIDIA H200", Some(132)).unwrap();
        assert!((fp32_peak(h200, 132) - 67.0).abs() < 0.5);
        let pcie = datasheet_cuda_core_clock_mhz("NVIDIA H100 PCIe", Some(114)).unwrap();
        assert!(
            (fp32_peak(pcie, 114) - 51.0).abs() < 0.5,
            "{}",
            fp32_peak(pcie, 114)
        );
        // The tensor clock would understate FP32: 61.8, the figure the issue caught.
        let tensor = datasheet_clock_mhz("NVIDIA H100 80GB HBM3", Some(132)).unwrap();
        assert!((fp32_peak(tensor, 132) - 61.8).abs() < 0.1);
        assert_eq!(
            datasheet_cuda_core_clock_mhz("NVIDIA A100-SXM4-80GB", Some(108)),
            None
        );
        // H100 NVL has the SXM's 132 SMs but other clocks: no SXM figure is borrowed
        // for it (its peaks fall back to NVML's maximum clock).
        assert_eq!(datasheet_clock_mhz("NVIDIA H100 NVL", Some(132)), None);
        assert_eq!(
            datasheet_cuda_core_clock_mhz("NVIDIA H100 NVL", Some(132)),
            None
        );
    }

    #[test]
    fn the_cpu_card_describes_this_machine() {
        let card = cpu_card("test");
        assert_eq!(card.kind, DeviceKind::Cpu);
        assert!(card.cpu.logical_cores >= 1);
        assert!(!card.name.is_empty());
        assert!(card.note.contains("CPU"));
    }
}

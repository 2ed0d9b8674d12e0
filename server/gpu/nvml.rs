//! NVML (the library behind nvidia-smi) for the GPU the CUDA context runs on. NVML's
//! device 0 is not necessarily CUDA's device 0: `CUDA_VISIBLE_DEVICES` renumbers CUDA's
//! devices and NVML ignores it, and on multi-GPU boxes the two orders can differ. So
//! the NVML device is found by the CUDA device's UUID (`GPU-…`, or `MIG-…` for a MIG
//! slice), then by PCI bus id, and every NVML figure GPU Lab shows — card, clocks,
//! link, memory, processes — comes from that one device. NVML is initialised once per
//! open GPU and shared.

use std::sync::Arc;

use cudarc::driver::CudaContext;
use cudarc::driver::sys::CUdevice_attribute;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::enums::device::UsedGpuMemory;

use super::loader::guarded;
use super::memory::GpuProcess;

/// NVML's handle on the device a CUDA context runs on.
#[derive(Clone)]
pub struct NvmlDevice {
    nvml: Arc<Nvml>,
    index: u32,
    /// How it was matched: `UUID GPU-…` or `PCI bus 0000:3B:00.0`.
    pub matched_by: String,
}

/// The CUDA UUID bytes in NVML's spelling: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
pub fn uuid_string(prefix: &str, bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{prefix}-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The PCI bus id in NVML's spelling: `00000000:3B:00.0`.
pub fn pci_bus_id(domain: u32, bus: u32, device: u32) -> String {
    format!("{domain:08X}:{bus:02X}:{device:02X}.0")
}

impl NvmlDevice {
    /// NVML's device for `ctx`'s GPU, or `None` when NVML does not load or no NVML
    /// device has its UUID or PCI address (then no NVML figure is shown rather than
    /// another GPU's).
    pub fn matching(ctx: &Arc<CudaContext>) -> Option<Self> {
        let nvml = Arc::new(guarded(Nvml::init).ok()?.ok()?);
        let uuid = ctx.uuid().ok().map(|u| u.bytes.map(|b| b as u8));
        let by_uuid = uuid
            .into_iter()
            .flat_map(|bytes| ["GPU", "MIG"].map(|prefix| uuid_string(prefix, &bytes)));
        for candidate in by_uuid {
            if let Ok(index) = nvml
                .device_by_uuid(candidate.as_str())
                .and_then(|d| d.index())
            {
                return Some(Self {
                    nvml,
                    index,
                    matched_by: format!("UUID {candidate}"),
                });
            }
        }
        let attr = |a| ctx.attribute(a).ok().and_then(|v| u32::try_from(v).ok());
        let bus_id = pci_bus_id(
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
        );
        let index = nvml
            .device_by_pci_bus_id(bus_id.as_str())
            .and_then(|d| d.index())
            .ok()?;
        Some(Self {
            nvml,
            index,
            matched_by: format!("PCI bus {bus_id}"),
        })
    }

    fn device(&self) -> Option<nvml_wrapper::Device<'_>> {
        self.nvml.device_by_index(self.index).ok()
    }

    /// Processes holding memory on this GPU (host PIDs, even inside a container).
    pub fn processes(&self) -> Option<Vec<GpuProcess>> {
        let procs = self.device()?.running_compute_processes().ok()?;
        Some(
            procs
                .iter()
                .map(|p| GpuProcess {
                    pid: p.pid,
                    used_bytes: match p.used_gpu_memory {
                        UsedGpuMemory::Used(b) => Some(b),
                        UsedGpuMemory::Unavailable => None,
                    },
                })
                .collect(),
        )
    }

    /// `(used, total)` device memory in bytes, as nvidia-smi shows it.
    pub fn memory(&self) -> Option<(u64, u64)> {
        let info = self.device()?.memory_info().ok()?;
        Some((info.used, info.total))
    }

    /// The PCIe link: `(current generation, current width, max generation, max width)`.
    /// Idle links train down, so only the maximum says what the slot can do.
    pub fn pcie(&self) -> Option<(u32, u32, u32, u32)> {
        let d = self.device()?;
        let (generation, width) = (
            d.current_pcie_link_gen().ok()?,
            d.current_pcie_link_width().ok()?,
        );
        Some((
            generation,
            width,
            d.max_pcie_link_gen().unwrap_or(generation),
            d.max_pcie_link_width().unwrap_or(width),
        ))
    }

    /// Maximum SM and memory clocks in MHz.
    pub fn max_clocks(&self) -> (Option<u32>, Option<u32>) {
        let Some(d) = self.device() else {
            return (None, None);
        };
        (
            d.max_clock_info(Clock::SM).ok(),
            d.max_clock_info(Clock::Memory).ok(),
        )
    }

    /// The driver's version string and the CUDA version it supports (`13.0`).
    pub fn driver(&self) -> (Option<String>, Option<String>) {
        (
            self.nvml.sys_driver_version().ok(),
            self.nvml
                .sys_cuda_driver_version()
                .ok()
                .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_spelled_as_nvml_spells_them() {
        let bytes = [
            0x3b, 0x1f, 0x00, 0xa2, 0x5c, 0x11, 0x4e, 0x9d, 0x80, 0x01, 0xde, 0xad, 0xbe, 0xef,
            0x00, 0x42,
        ];
        assert_eq!(
            uuid_string("GPU", &bytes),
            "GPU-3b1f00a2-5c11-4e9d-8001-deadbeef0042"
        );
        assert_eq!(pci_bus_id(0, 0x3b, 0), "00000000:3B:00.0");
    }
}

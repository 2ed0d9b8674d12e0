//! The host machine as Linux describes it: the CPU model and core count, total and
//! available RAM from `/proc/meminfo`, and this process's resident memory. Read by the
//! device card (every card names its host CPU), the CPU backend's memory snapshot and
//! the allocator playground's third bar. [`blas_reference`] reads this machine's
//! recorded SGEMM timings against numpy/OpenBLAS, which `/api/device` serves in the
//! card's CPU when they were made on this CPU.

pub mod blas_reference;

use serde::Serialize;

/// The machine's CPU, always reported.
#[derive(Debug, Clone, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct CpuInfo {
    /// Model name from `/proc/cpuinfo` (or the architecture when unknown).
    pub model: String,
    /// Logical cores this process may use.
    pub logical_cores: usize,
    /// Total RAM in bytes, from `/proc/meminfo`, if readable.
    pub memory_total_bytes: Option<u64>,
    /// The SGEMM kernels the CPU backend runs here ([`crate::cpu::kernel`]); empty in
    /// cards recorded before it was reported.
    #[serde(default)]
    pub sgemm_kernel: String,
    /// numpy/OpenBLAS against our SGEMM, recorded on this CPU by `tests/bench/sgemm.sh`;
    /// present only when such a record was found and names this CPU
    /// ([`blas_reference::load`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blas_reference: Option<blas_reference::BlasReference>,
}

/// A `/proc/meminfo` field (`MemTotal:`, `MemAvailable:`) in bytes.
pub fn meminfo(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kib| kib * 1024)
}

/// This process's resident set size, from `/proc/self/statm`.
pub fn process_resident_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
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
    CpuInfo {
        model,
        logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_total_bytes: meminfo("MemTotal:"),
        sgemm_kernel: crate::cpu::kernel().to_string(),
        blas_reference: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_a_cpu_memory_and_a_resident_set() {
        let cpu = cpu_info();
        assert!(cpu.logical_cores >= 1 && !cpu.model.is_empty());
        assert!(cpu.memory_total_bytes.unwrap() > 0);
        assert!(meminfo("MemAvailable:").unwrap() > 0);
        assert!(process_resident_bytes().unwrap() > 0);
        assert!(meminfo("NoSuchField:").is_none());
    }
}

//! The host machine, on Linux, Windows and macOS alike: the CPU model and core count,
//! total and available RAM, this process's resident memory and the machine's name, all
//! asked of [`sysinfo`] (which reads `/proc` on Linux, the Win32 API on Windows and
//! `sysctl`/Mach on macOS) rather than parsed by hand from files only Linux has. Read
//! by the device card (every card names its host CPU), the CPU backend's memory
//! snapshot, the allocator playground's third bar and the workers' names in the queue.
//! [`blas_reference`] reads this machine's recorded SGEMM timings against
//! numpy/OpenBLAS, which `/api/device` serves in the card's CPU when they were made on
//! this CPU.

pub mod blas_reference;

use serde::Serialize;
use sysinfo::{CpuRefreshKind, MemoryRefreshKind, ProcessRefreshKind, ProcessesToUpdate, System};

/// The machine's CPU, always reported.
#[derive(Debug, Clone, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct CpuInfo {
    /// The CPU's model name as the operating system reports it (or the architecture
    /// when it reports none).
    pub model: String,
    /// Logical cores this process may use.
    pub logical_cores: usize,
    /// Total RAM in bytes, if the operating system says.
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

/// Host RAM as the operating system reports it, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// All of it.
    pub total_bytes: Option<u64>,
    /// What a new allocation can have without swapping (Linux's `MemAvailable`).
    pub available_bytes: Option<u64>,
}

/// Reads host RAM now.
pub fn memory() -> Memory {
    let mut system = System::new();
    system.refresh_memory_specifics(MemoryRefreshKind::nothing().with_ram());
    let known = |bytes: u64| (bytes > 0).then_some(bytes);
    Memory {
        total_bytes: known(system.total_memory()),
        available_bytes: known(system.available_memory()),
    }
}

/// This process's resident set size (Windows: its working set), in bytes.
pub fn process_resident_bytes() -> Option<u64> {
    let pid = sysinfo::get_current_pid().ok()?;
    let mut system = System::new();
    system.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        false,
        ProcessRefreshKind::nothing().with_memory(),
    );
    system
        .process(pid)
        .map(sysinfo::Process::memory)
        .filter(|bytes| *bytes > 0)
}

/// The machine's name, or `fallback` when the operating system gives none.
pub fn host_name(fallback: &str) -> String {
    System::host_name()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| fallback.to_string())
}

/// The CPU's model name, or "`ARCH` CPU" when the operating system reports none (some
/// Arm boards, emulators).
pub fn cpu_model() -> String {
    let system = System::new_with_specifics(
        sysinfo::RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing()),
    );
    system
        .cpus()
        .iter()
        .map(|cpu| cpu.brand().trim())
        .find(|brand| !brand.is_empty())
        .map_or_else(
            || format!("{} CPU", std::env::consts::ARCH),
            ToString::to_string,
        )
}

/// Reads the host CPU's description.
pub fn cpu_info() -> CpuInfo {
    CpuInfo {
        model: cpu_model(),
        logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_total_bytes: memory().total_bytes,
        sgemm_kernel: crate::cpu::kernel().to_string(),
        blas_reference: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_a_cpu_memory_a_resident_set_and_a_name() {
        let cpu = cpu_info();
        assert!(cpu.logical_cores >= 1 && !cpu.model.is_empty());
        let memory = memory();
        let total = memory.total_bytes.unwrap();
        let available = memory.available_bytes.unwrap();
        assert_eq!(cpu.memory_total_bytes, Some(total));
        assert!(available > 0 && available <= total, "{memory:?}");
        let resident = process_resident_bytes().unwrap();
        assert!(resident > 0 && resident < total, "{resident}");
        assert!(!host_name("fallback").is_empty());
    }

    /// On Linux the figures must be those the kernel publishes in `/proc`, which the
    /// card showed before they came from `sysinfo`: the same model name (a recorded
    /// SGEMM reference is matched on it) and the same total.
    #[cfg(target_os = "linux")]
    #[test]
    fn on_linux_the_figures_are_the_kernels_own() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        if let Some(model) = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
        {
            assert_eq!(cpu_model(), model.1.trim());
        }
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
        let kib: u64 = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(memory().total_bytes, Some(kib * 1024));
    }
}

//! Lesson 7's live memory: a snapshot of what the system reports (NVML and the driver on
//! a GPU host; host RAM and this process's resident set on the CPU backend), and the
//! per-student allocator playgrounds ([`class`]), each a capped [`pool::Pool`] of real
//! memory run by a model of PyTorch's caching allocator ([`allocator`]: segments,
//! blocks, splitting, the two pools, expandable segments, the memory_viz snapshot),
//! with class-wide and per-address totals and idle expiry.

pub mod allocator;
pub mod class;
pub mod pool;
pub mod remote;

use std::time::Duration;

use serde::Serialize;

use crate::gpu::{DeviceKind, GpuProcess};
use crate::host::{self, process_resident_bytes};
pub use class::{Caps, PlaygroundView, Playgrounds};
use pool::Source;

/// A snapshot of memory as the system reports it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Snapshot {
    /// `cuda` or `cpu`.
    pub backend: DeviceKind,
    /// NVML: device memory in use (all processes, plus driver reservations).
    pub nvml_used_bytes: Option<u64>,
    /// NVML: device memory in total.
    pub nvml_total_bytes: Option<u64>,
    /// Driver (`cuMemGetInfo`): free device memory.
    pub driver_free_bytes: Option<u64>,
    /// Driver: total device memory.
    pub driver_total_bytes: Option<u64>,
    /// Processes using the GPU (NVML).
    pub processes: Vec<GpuProcess>,
    /// Host RAM in total.
    pub host_total_bytes: Option<u64>,
    /// Host RAM available.
    pub host_available_bytes: Option<u64>,
    /// This server process's resident memory.
    pub process_resident_bytes: Option<u64>,
}

/// Takes a snapshot using `source` for the driver's view.
pub fn snapshot(source: &Source) -> Snapshot {
    let host = host::memory();
    let mut snap = Snapshot {
        backend: DeviceKind::Cpu,
        nvml_used_bytes: None,
        nvml_total_bytes: None,
        driver_free_bytes: None,
        driver_total_bytes: None,
        processes: Vec::new(),
        host_total_bytes: host.total_bytes,
        host_available_bytes: host.available_bytes,
        process_resident_bytes: process_resident_bytes(),
    };
    if let Source::Device(memory) = source {
        let report = memory.report();
        snap.backend = DeviceKind::Cuda;
        snap.nvml_used_bytes = report.nvml_used_bytes;
        snap.nvml_total_bytes = report.nvml_total_bytes;
        snap.driver_free_bytes = report.driver_free_bytes;
        snap.driver_total_bytes = report.driver_total_bytes;
        snap.processes = report.processes;
    }
    snap
}

/// The snapshot as `gpulab memory` prints it.
pub fn snapshot_table(s: &Snapshot) -> String {
    use crate::format::gib;
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "backend            : {}", s.backend);
    let _ = writeln!(
        out,
        "NVML used / total  : {} / {}",
        gib(s.nvml_used_bytes),
        gib(s.nvml_total_bytes)
    );
    let _ = writeln!(
        out,
        "driver free / total: {} / {}",
        gib(s.driver_free_bytes),
        gib(s.driver_total_bytes)
    );
    let _ = writeln!(
        out,
        "host available / total: {} / {}",
        gib(s.host_available_bytes),
        gib(s.host_total_bytes)
    );
    let _ = writeln!(
        out,
        "this process (resident): {}",
        gib(s.process_resident_bytes)
    );
    for p in &s.processes {
        let _ = writeln!(out, "GPU process {:>8}: {}", p.pid, gib(p.used_bytes));
    }
    out
}

/// The selftest's memory accounting: a pool's allocated and reserved counters follow
/// PyTorch's rules, and real memory moves where the system view says it does (device
/// memory per the driver, or this process's resident set).
pub fn selftest(source: &Source) -> Vec<crate::experiments::Check> {
    use crate::experiments::Check;
    const MIB: u64 = 1 << 20;
    let where_ = match source {
        Source::Host => "host",
        Source::Device(_) => "device",
    };
    let caps = Caps {
        per_student: 64 * MIB,
        total: 64 * MIB,
        per_address: 64 * MIB,
        idle: Duration::from_secs(60),
    };
    let playgrounds = Playgrounds::new(source.clone(), caps);
    let (_, before) = playgrounds.with("selftest", None, |_, _| ());
    let (allocated, after) = playgrounds.with("selftest", None, |pool, room| {
        pool.allocate("x", 32 * MIB, room)
    });
    let (freed, cached) = playgrounds.with("selftest", None, |pool, _| pool.free("x"));
    let (_, emptied) = playgrounds.with("selftest", None, |pool, _| pool.empty_cache());
    let grew = after
        .system_used_bytes
        .zip(before.system_used_bytes)
        .map(|(a, b)| a.saturating_sub(b));
    vec![
        Check::expect(
            format!("playground ({where_}): allocated and reserved follow the caching allocator"),
            allocated.is_ok()
                && freed.is_ok()
                && (after.pool.allocated_bytes, after.pool.reserved_bytes) == (32 * MIB, 32 * MIB)
                && (cached.pool.allocated_bytes, cached.pool.reserved_bytes) == (0, 32 * MIB)
                && (emptied.pool.allocated_bytes, emptied.pool.reserved_bytes) == (0, 0),
            format!(
                "allocate 32 MiB → {}/{} B allocated/reserved; free → {}/{}; empty_cache → {}/{}",
                after.pool.allocated_bytes,
                after.pool.reserved_bytes,
                cached.pool.allocated_bytes,
                cached.pool.reserved_bytes,
                emptied.pool.allocated_bytes,
                emptied.pool.reserved_bytes
            ),
        ),
        Check::expect(
            format!("playground ({where_}): the system view grows by the allocation"),
            grew.is_some_and(|g| g >= 30 * MIB),
            format!(
                "{} grew by {} bytes for a 32 MiB tensor",
                after.system_view,
                grew.map_or("an unknown number of".to_string(), |g| g.to_string())
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_snapshot_reads_host_memory() {
        let snap = snapshot(&Source::Host);
        assert!(snapshot_table(&snap).contains("backend            : cpu"));
        assert_eq!(snap.backend, DeviceKind::Cpu);
        assert!(snap.host_total_bytes.unwrap() > 0);
        assert!(snap.process_resident_bytes.unwrap() > 0);
        assert!(snap.driver_total_bytes.is_none());
    }
}

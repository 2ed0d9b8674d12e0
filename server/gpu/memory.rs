//! Memory snapshots (lesson 7): what the driver and NVML say about GPU memory, and per
//! process use; on the CPU backend, the host's memory and this process's resident set.
//! Also the per-student registry of allocator playgrounds, with caps and expiry.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::libs::guarded;
use super::pool::{Pool, PoolStats, Source};

/// One process holding GPU memory.
#[derive(Debug, Clone, Serialize)]
pub struct GpuProcess {
    /// Host PID (inside a container NVML shows host PIDs).
    pub pid: u32,
    /// Bytes it holds, when NVML can tell.
    pub used_bytes: Option<u64>,
}

/// A snapshot of memory as the system reports it.
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// `cuda` or `cpu`.
    pub backend: &'static str,
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

fn meminfo(key: &str) -> Option<u64> {
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

/// Takes a snapshot using `source` for the driver's view.
pub fn snapshot(source: &Source) -> Snapshot {
    let mut snap = Snapshot {
        backend: "cpu",
        nvml_used_bytes: None,
        nvml_total_bytes: None,
        driver_free_bytes: None,
        driver_total_bytes: None,
        processes: Vec::new(),
        host_total_bytes: meminfo("MemTotal:"),
        host_available_bytes: meminfo("MemAvailable:"),
        process_resident_bytes: process_resident_bytes(),
    };
    if let Source::Device(ctx) = source {
        snap.backend = "cuda";
        if let Ok((free, total)) = ctx.mem_get_info() {
            snap.driver_free_bytes = Some(free as u64);
            snap.driver_total_bytes = Some(total as u64);
        }
        if let Ok(Ok(nvml)) = guarded(nvml_wrapper::Nvml::init)
            && let Ok(device) = nvml.device_by_index(0)
        {
            if let Ok(info) = device.memory_info() {
                snap.nvml_used_bytes = Some(info.used);
                snap.nvml_total_bytes = Some(info.total);
            }
            if let Ok(procs) = device.running_compute_processes() {
                snap.processes = procs
                    .iter()
                    .map(|p| GpuProcess {
                        pid: p.pid,
                        used_bytes: match p.used_gpu_memory {
                            nvml_wrapper::enums::device::UsedGpuMemory::Used(b) => Some(b),
                            nvml_wrapper::enums::device::UsedGpuMemory::Unavailable => None,
                        },
                    })
                    .collect();
            }
        }
    }
    snap
}

/// Every student's playground, with caps and idle expiry.
pub struct Playgrounds {
    source: Source,
    per_student: u64,
    total: u64,
    idle: Duration,
    pools: Mutex<HashMap<String, (Pool, Instant)>>,
}

/// A playground's state plus the system's view, for the three bars.
#[derive(Debug, Clone, Serialize)]
pub struct PlaygroundView {
    /// The pool's counters and tensors.
    pub pool: PoolStats,
    /// Device memory in use per the driver (GPU), or this process's resident memory
    /// (CPU backend): the third bar.
    pub system_used_bytes: Option<u64>,
    /// What `system_used_bytes` measures.
    pub system_view: &'static str,
}

impl Playgrounds {
    /// Pools drawing from `source`, each capped at `per_student`, all together at `total`.
    pub fn new(source: Source, per_student: u64, total: u64, idle: Duration) -> Self {
        Self {
            source,
            per_student,
            total,
            idle,
            pools: Mutex::new(HashMap::new()),
        }
    }

    /// The memory source (host or device).
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Runs `f` on `student`'s pool (created on first use) with the room left under the
    /// total cap; idle pools are dropped (their memory released) first.
    pub fn with<T>(
        &self,
        student: &str,
        f: impl FnOnce(&mut Pool, u64) -> T,
    ) -> (T, PlaygroundView) {
        let mut pools = self
            .pools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let idle = self.idle;
        pools.retain(|_, (_, used)| used.elapsed() < idle);
        let others: u64 = pools
            .iter()
            .filter(|(k, _)| k.as_str() != student)
            .map(|(_, (p, _))| p.reserved())
            .sum();
        let entry = pools.entry(student.to_string()).or_insert_with(|| {
            (
                Pool::new(self.source.clone(), self.per_student),
                Instant::now(),
            )
        });
        entry.1 = Instant::now();
        let room = self.total.saturating_sub(others + entry.0.reserved());
        let out = f(&mut entry.0, room);
        let view = self.view(entry.0.stats());
        (out, view)
    }

    /// Drops `student`'s pool, releasing its memory.
    pub fn reset(&self, student: &str) -> PlaygroundView {
        self.pools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(student);
        self.with(student, |_, _| ()).1
    }

    /// Bytes reserved by `student`'s playground (0 without one).
    pub fn reserved_by(&self, student: &str) -> u64 {
        self.pools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(student)
            .map_or(0, |(p, _)| p.reserved())
    }

    /// Bytes reserved by all playgrounds.
    pub fn total_reserved(&self) -> u64 {
        self.pools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .map(|(p, _)| p.reserved())
            .sum()
    }

    fn view(&self, pool: PoolStats) -> PlaygroundView {
        match &self.source {
            Source::Device(ctx) => PlaygroundView {
                pool,
                system_used_bytes: ctx
                    .mem_get_info()
                    .ok()
                    .map(|(free, total)| (total - free) as u64),
                system_view: "device memory in use per the driver (all processes, CUDA contexts included)",
            },
            Source::Host => PlaygroundView {
                pool,
                system_used_bytes: process_resident_bytes(),
                system_view: "this server process's resident host memory",
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_snapshot_reads_host_memory() {
        let snap = snapshot(&Source::Host);
        assert_eq!(snap.backend, "cpu");
        assert!(snap.host_total_bytes.unwrap() > 0);
        assert!(snap.process_resident_bytes.unwrap() > 0);
        assert!(snap.driver_total_bytes.is_none());
    }

    #[test]
    fn playgrounds_are_per_student_and_share_a_total_cap() {
        let pg = Playgrounds::new(Source::Host, 8 << 20, 12 << 20, Duration::from_secs(60));
        let (ok, view) = pg.with("ann", |p, room| p.allocate("w", 6 << 20, room));
        ok.unwrap();
        assert_eq!(view.pool.allocated_bytes, 6 << 20);
        let (err, _) = pg.with("bob", |p, room| p.allocate("w", 7 << 20, room));
        assert!(
            err.unwrap_err().contains("shared"),
            "ann's 6 MiB + bob's 7 MiB pass the 12 MiB total"
        );
        let (ok, view) = pg.with("bob", |p, room| p.allocate("w", 5 << 20, room));
        ok.unwrap();
        assert_eq!(view.pool.tensors.len(), 1);
        assert_eq!(pg.total_reserved(), 11 << 20);
        assert_eq!(pg.reset("ann").pool.reserved_bytes, 0);
        assert_eq!(pg.total_reserved(), 5 << 20);
    }

    #[test]
    fn idle_playgrounds_expire() {
        let pg = Playgrounds::new(Source::Host, 8 << 20, 64 << 20, Duration::from_millis(0));
        pg.with("ann", |p, room| p.allocate("w", 1 << 20, room))
            .0
            .unwrap();
        let (_, view) = pg.with("ann", |_, _| ());
        assert_eq!(
            view.pool.reserved_bytes, 0,
            "an idle pool is dropped before the next use"
        );
    }
}

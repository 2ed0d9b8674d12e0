//! Lesson 7's live memory: a snapshot of what the system reports (NVML and the driver on
//! a GPU host; host RAM and this process's resident set on the CPU backend), and the
//! per-student allocator playgrounds, each a capped caching [`pool::Pool`] of real
//! memory, with a class-wide total and idle expiry.

pub mod pool;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::gpu::GpuProcess;
use crate::host::{meminfo, process_resident_bytes};
use pool::{Pool, PoolStats, Source};

/// A snapshot of memory as the system reports it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
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
    if let Source::Device(memory) = source {
        let report = memory.report();
        snap.backend = "cuda";
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

/// Every student's playground, with caps and idle expiry.
pub struct Playgrounds {
    source: Source,
    per_student: u64,
    total: u64,
    idle: Duration,
    pools: Mutex<HashMap<String, (Pool, Instant)>>,
}

/// A playground's state plus the system's view, for the three bars.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
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
            Source::Device(memory) => PlaygroundView {
                pool,
                system_used_bytes: memory.used_bytes(),
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
    let playgrounds = Playgrounds::new(source.clone(), 64 * MIB, 64 * MIB, Duration::from_secs(60));
    let (_, before) = playgrounds.with("selftest", |_, _| ());
    let (allocated, after) =
        playgrounds.with("selftest", |pool, room| pool.allocate("x", 32 * MIB, room));
    let (freed, cached) = playgrounds.with("selftest", |pool, _| pool.free("x"));
    let (_, emptied) = playgrounds.with("selftest", |pool, _| pool.empty_cache());
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
            err.unwrap_err().to_string().contains("shared"),
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

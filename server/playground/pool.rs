//! The allocator playground (lesson 7): one student's [`Allocator`] — the model of
//! PyTorch's caching allocator — with real memory behind each of its segments: device
//! memory from `cuMemAlloc` on a GPU host (one allocation per segment, or per page of
//! an expandable segment, so the driver's and NVML's view move with `reserved`), host
//! memory (pages actually touched) on the CPU backend. The model decides; this file
//! only supplies and returns the memory and words the errors.

use std::collections::BTreeMap;

use serde::Serialize;

use super::allocator::{
    AllocConf, Allocator, Chunk, Driver, OutOfMemory, SegmentView, format_size, snapshot,
};
use crate::gpu::{DeviceBlock, DeviceMemory, GpuError};

/// The most live tensors one playground holds (each is a block the model searches).
pub const MAX_TENSORS: usize = 256;

/// Real memory behind one segment or page.
pub enum Backing {
    /// Host memory whose pages were written, so the OS really committed them.
    Host(Vec<u8>),
    /// Device memory on the GPU.
    Device(DeviceBlock),
}

/// Why the playground refused a request; the text is what the student reads.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The name is taken.
    #[error("a tensor named `{0}` already exists: free it first")]
    Exists(String),
    /// No such tensor.
    #[error("no tensor named `{0}`")]
    NoSuchTensor(String),
    /// Too many live tensors.
    #[error("a playground holds at most {MAX_TENSORS} live tensors: free some first")]
    TooMany,
    /// Past the student's cap or the class's total, worded like PyTorch's OOM.
    #[error("{0}")]
    OutOfMemory(String),
    /// The request does not fit this machine's address space.
    #[error("block too large")]
    TooLarge,
    /// The driver refused device memory.
    #[error(transparent)]
    Driver(#[from] GpuError),
}

/// Where memory comes from.
#[derive(Clone)]
pub enum Source {
    /// The host (CPU backend).
    Host,
    /// GPU 0 through its primary context.
    Device(DeviceMemory),
}

impl Source {
    fn allocate(&self, bytes: u64) -> Result<Backing, PoolError> {
        let n = usize::try_from(bytes).map_err(|_| PoolError::TooLarge)?;
        match self {
            Self::Host => {
                let mut v = vec![0u8; n];
                // Touch every page so the memory is really resident, as device memory is.
                for i in (0..n).step_by(4096) {
                    v[i] = 1;
                }
                Ok(Backing::Host(v))
            }
            Self::Device(memory) => Ok(Backing::Device(memory.allocate(n)?)),
        }
    }
}

/// The model's [`Driver`] for one change: real memory from `source`, at most `room`
/// more bytes than the pool held when the change began.
struct RealMemory<'a> {
    source: &'a Source,
    backings: &'a mut BTreeMap<Chunk, (u64, Backing)>,
    room: u64,
    error: Option<PoolError>,
}

impl Driver for RealMemory<'_> {
    fn map(&mut self, chunk: Chunk, bytes: u64) -> bool {
        if bytes > self.room {
            return false;
        }
        match self.source.allocate(bytes) {
            Ok(backing) => {
                self.room -= bytes;
                self.backings.insert(chunk, (bytes, backing));
                true
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    fn unmap(&mut self, chunk: Chunk) {
        if let Some((bytes, _)) = self.backings.remove(&chunk) {
            self.room = self.room.saturating_add(bytes);
        }
    }
}

/// One student's pool.
pub struct Pool {
    source: Source,
    allocator: Allocator,
    backings: BTreeMap<Chunk, (u64, Backing)>,
}

/// What the playground draws: the two counters, the tensors and the segments.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct PoolStats {
    /// Bytes in blocks that hold tensors (`torch.cuda.memory_allocated()`).
    pub allocated_bytes: u64,
    /// Bytes of segments held from the device (`memory_reserved()`).
    pub reserved_bytes: u64,
    /// The student's cap on reserved bytes.
    pub cap_bytes: u64,
    /// Live tensors by name with their block sizes.
    pub tensors: BTreeMap<String, u64>,
    /// Sizes of the cached (free) blocks, in address order.
    pub cached_blocks: Vec<u64>,
    /// The segments with their blocks, in address order.
    pub segments: Vec<SegmentView>,
    /// The allocator's options (`PYTORCH_CUDA_ALLOC_CONF`).
    pub conf: AllocConf,
}

impl Pool {
    /// An empty pool drawing from `source`, holding at most `cap` bytes.
    pub fn new(source: Source, cap: u64) -> Self {
        Self {
            source,
            allocator: Allocator::new(AllocConf::default(), cap),
            backings: BTreeMap::new(),
        }
    }

    /// Bytes held from the device.
    pub fn reserved(&self) -> u64 {
        self.allocator.reserved()
    }

    /// Allocates tensor `name` of `bytes`; `room` is how many more bytes this pool may
    /// take from the class's memory (its cap, the class total, its address's share).
    pub fn allocate(&mut self, name: &str, bytes: u64, room: u64) -> Result<(), PoolError> {
        if self.allocator.holds(name) {
            return Err(PoolError::Exists(name.to_string()));
        }
        if self.allocator.tensors().count() >= MAX_TENSORS {
            return Err(PoolError::TooMany);
        }
        let mut driver = RealMemory {
            source: &self.source,
            backings: &mut self.backings,
            room,
            error: None,
        };
        let outcome = self.allocator.malloc(name, bytes, &mut driver);
        let (error, room_left) = (driver.error.take(), driver.room);
        match (outcome, error) {
            (Ok(()), _) => Ok(()),
            (Err(_), Some(error)) => Err(error),
            (Err(oom), None) => Err(PoolError::OutOfMemory(self.oom_message(&oom, room_left))),
        }
    }

    /// PyTorch's out-of-memory message with the playground's figures.
    fn oom_message(&self, oom: &OutOfMemory, room: u64) -> String {
        let cap = self.allocator.limit();
        let free = cap.saturating_sub(oom.reserved).min(room);
        let limit = if oom.reserved + oom.tried <= cap {
            "the class's shared playground memory, or your network address's share of it, is used up"
        } else {
            "your playground cap"
        };
        format!(
            "CUDA out of memory. Tried to allocate {}. The playground has a total capacity of {} of which {} is free ({limit}). Of the allocated memory {} is allocated by PyTorch, and {} is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
            format_size(oom.tried),
            format_size(cap),
            format_size(free),
            format_size(oom.allocated),
            format_size(oom.reserved - oom.allocated),
        )
    }

    /// Frees tensor `name`: its block stays cached in its segment.
    pub fn free(&mut self, name: &str) -> Result<(), PoolError> {
        if self.allocator.free(name) {
            Ok(())
        } else {
            Err(PoolError::NoSuchTensor(name.to_string()))
        }
    }

    /// Runs `f` on the model with a driver that can only give memory back.
    fn with_driver(&mut self, f: impl FnOnce(&mut Allocator, &mut RealMemory<'_>)) {
        let mut driver = RealMemory {
            source: &self.source,
            backings: &mut self.backings,
            room: 0,
            error: None,
        };
        f(&mut self.allocator, &mut driver);
    }

    /// `torch.cuda.empty_cache()`: gives back every entirely free segment (and free
    /// pages of expandable segments); live tensors' segments stay.
    pub fn empty_cache(&mut self) {
        self.with_driver(|allocator, driver| allocator.empty_cache(driver));
    }

    /// Starts over with options `conf`, as a new Python process with
    /// `PYTORCH_CUDA_ALLOC_CONF` set would: every tensor and segment is dropped.
    pub fn configure(&mut self, conf: AllocConf) {
        let cap = self.allocator.limit();
        self.with_driver(|allocator, driver| allocator.clear(driver));
        self.allocator = Allocator::new(conf, cap);
    }

    /// The state and history in `torch.cuda.memory._snapshot()`'s shape.
    pub fn snapshot(&self) -> serde_json::Value {
        snapshot::snapshot(&self.allocator)
    }

    /// The numbers and segments for the view.
    pub fn stats(&self) -> PoolStats {
        let segments = self.allocator.segment_views();
        PoolStats {
            allocated_bytes: self.allocator.allocated(),
            reserved_bytes: self.allocator.reserved(),
            cap_bytes: self.allocator.limit(),
            tensors: self
                .allocator
                .tensors()
                .map(|(name, size, _)| (name.to_string(), size))
                .collect(),
            cached_blocks: segments
                .iter()
                .flat_map(|s| &s.blocks)
                .filter(|b| b.tensor.is_none())
                .map(|b| b.size)
                .collect(),
            segments,
            conf: self.allocator.conf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn segments_hold_real_memory_and_freeing_keeps_them_cached() {
        let mut pool = Pool::new(Source::Host, 64 * MIB);
        pool.allocate("a", 10 * MIB, u64::MAX).unwrap();
        pool.allocate("b", 1000, u64::MAX).unwrap();
        let s = pool.stats();
        assert_eq!(s.allocated_bytes, 10 * MIB + 1024);
        assert_eq!(
            s.reserved_bytes,
            12 * MIB,
            "a 10 MiB segment and a 2 MiB small one"
        );
        let held: u64 = pool.backings.values().map(|(b, _)| b).sum();
        assert_eq!(held, s.reserved_bytes, "each segment is real memory");
        pool.free("a").unwrap();
        assert_eq!(
            pool.stats().reserved_bytes,
            12 * MIB,
            "freed memory stays reserved"
        );
        pool.allocate("c", 4 * MIB, u64::MAX).unwrap();
        let s = pool.stats();
        assert_eq!(
            (s.tensors["c"], s.reserved_bytes),
            (4 * MIB, 12 * MIB),
            "the cached 10 MiB block is reused and split, no new segment"
        );
        pool.free("c").unwrap();
        pool.empty_cache();
        assert_eq!(pool.stats().reserved_bytes, 2 * MIB);
        assert_eq!(pool.backings.len(), 1);
        assert!(pool.free("nope").is_err());
        assert!(
            pool.allocate("b", 1, u64::MAX)
                .unwrap_err()
                .to_string()
                .contains("already exists")
        );
    }

    #[test]
    fn past_the_cap_it_releases_cache_then_fails_with_pytorchs_message() {
        let mut pool = Pool::new(Source::Host, 40 * MIB);
        pool.allocate("x", 4 * MIB, u64::MAX).unwrap();
        let err = pool
            .allocate("z", 24 * MIB, u64::MAX)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "CUDA out of memory. Tried to allocate 24.00 MiB. The playground has a total capacity of 40.00 MiB of which 20.00 MiB is free (your playground cap). Of the allocated memory 4.00 MiB is allocated by PyTorch, and 16.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
        );
        let shared = pool.allocate("w", 17 * MIB, MIB).unwrap_err().to_string();
        assert!(shared.contains("shared"), "{shared}");
    }

    #[test]
    fn the_message_names_the_segment_pytorch_would_have_asked_for() {
        let mut pool = Pool::new(Source::Host, 16 * MIB);
        let err = pool
            .allocate("t", 4 * MIB, u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("CUDA out of memory. Tried to allocate 20.00 MiB. "),
            "a 4 MiB tensor asks for a 20 MiB segment: {err}"
        );
    }

    #[test]
    fn configure_starts_over_with_the_options() {
        let mut pool = Pool::new(Source::Host, 64 * MIB);
        pool.allocate("x", 4 * MIB, u64::MAX).unwrap();
        let conf = AllocConf {
            expandable_segments: true,
            max_split_size_mb: None,
        };
        pool.configure(conf);
        assert_eq!((pool.reserved(), pool.backings.len()), (0, 0));
        pool.allocate("a", MIB, u64::MAX).unwrap();
        assert_eq!(pool.stats().conf, conf);
        assert!(pool.stats().segments[0].is_expandable);
        for i in 0..MAX_TENSORS - 1 {
            pool.allocate(&format!("t{i}"), 512, u64::MAX).unwrap();
        }
        assert!(matches!(
            pool.allocate("one_more", 512, u64::MAX),
            Err(PoolError::TooMany)
        ));
    }
}

//! The allocator playground (lesson 7): a per-student caching pool modelled on
//! PyTorch's CUDA caching allocator, backed by real memory — device memory from
//! `cuMemAlloc` on a GPU host, host memory (pages actually touched) on the CPU backend.
//!
//! Sizes round up to 512-byte multiples. Freeing a tensor keeps its block cached
//! (reserved but unallocated); a later allocation reuses the best-fitting cached block
//! before asking the driver for more; `empty_cache` hands cached blocks back. When a
//! request would pass the student's cap, cached blocks are released first and the
//! request retried, and only then does it fail with an out-of-memory error worded like
//! PyTorch's.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::gpu::{DeviceBlock, DeviceMemory, GpuError};

/// Allocation granularity, as in PyTorch's allocator.
pub const ROUND: u64 = 512;
const MIB: f64 = 1024.0 * 1024.0;

/// Real memory behind one block.
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

/// Where blocks come from.
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

struct Block {
    size: u64,
    _memory: Backing,
}

/// One student's pool.
pub struct Pool {
    source: Source,
    cap: u64,
    live: BTreeMap<String, Block>,
    cached: Vec<Block>,
}

/// The three numbers the playground draws, plus the tensors.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct PoolStats {
    /// Bytes in live tensors' blocks (`torch.cuda.memory_allocated()`).
    pub allocated_bytes: u64,
    /// Bytes the pool holds from the driver, live or cached (`memory_reserved()`).
    pub reserved_bytes: u64,
    /// The student's cap on reserved bytes.
    pub cap_bytes: u64,
    /// Live tensors by name with their block sizes.
    pub tensors: BTreeMap<String, u64>,
    /// Cached (free) block sizes.
    pub cached_blocks: Vec<u64>,
}

/// Rounds a request up to the allocator's granularity.
pub fn round(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(ROUND) * ROUND
}

impl Pool {
    /// An empty pool drawing from `source`, holding at most `cap` bytes.
    pub fn new(source: Source, cap: u64) -> Self {
        Self {
            source,
            cap,
            live: BTreeMap::new(),
            cached: Vec::new(),
        }
    }

    /// Bytes held from the driver.
    pub fn reserved(&self) -> u64 {
        self.live.values().chain(&self.cached).map(|b| b.size).sum()
    }

    /// Allocates tensor `name` of `bytes`; `global_room` says how many more bytes all
    /// playgrounds together may still reserve.
    pub fn allocate(&mut self, name: &str, bytes: u64, global_room: u64) -> Result<(), PoolError> {
        if self.live.contains_key(name) {
            return Err(PoolError::Exists(name.to_string()));
        }
        let size = round(bytes);
        let best = self
            .cached
            .iter()
            .enumerate()
            .filter(|(_, b)| b.size >= size)
            .min_by_key(|(_, b)| b.size)
            .map(|(i, _)| i);
        if let Some(i) = best {
            let block = self.cached.swap_remove(i);
            self.live.insert(name.to_string(), block);
            return Ok(());
        }
        if self.reserved() + size > self.cap || size > global_room {
            // PyTorch frees its cached blocks and retries before giving up.
            self.empty_cache();
        }
        if self.reserved() + size > self.cap || size > global_room {
            let allocated = self.live.values().map(|b| b.size).sum::<u64>();
            let cached = self.reserved() - allocated;
            let limit = if size > global_room {
                "the class's shared playground memory, or your network address's share of it, is used up"
            } else {
                "your playground cap"
            };
            return Err(PoolError::OutOfMemory(format!(
                "CUDA out of memory. Tried to allocate {:.2} MiB. Playground capacity {:.2} MiB ({limit}); {:.2} MiB is allocated by your tensors; {:.2} MiB is reserved but unallocated. Free tensors you no longer need (del) or allocate less.",
                size as f64 / MIB,
                self.cap as f64 / MIB,
                allocated as f64 / MIB,
                cached as f64 / MIB
            )));
        }
        let memory = self.source.allocate(size)?;
        self.live.insert(
            name.to_string(),
            Block {
                size,
                _memory: memory,
            },
        );
        Ok(())
    }

    /// Frees tensor `name`: its block stays cached in the pool.
    pub fn free(&mut self, name: &str) -> Result<(), PoolError> {
        let block = self
            .live
            .remove(name)
            .ok_or_else(|| PoolError::NoSuchTensor(name.to_string()))?;
        self.cached.push(block);
        Ok(())
    }

    /// Returns every cached block to the driver; live tensors are untouched.
    pub fn empty_cache(&mut self) {
        self.cached.clear();
    }

    /// The numbers for the bars.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            allocated_bytes: self.live.values().map(|b| b.size).sum(),
            reserved_bytes: self.reserved(),
            cap_bytes: self.cap,
            tensors: self.live.iter().map(|(k, b)| (k.clone(), b.size)).collect(),
            cached_blocks: self.cached.iter().map(|b| b.size).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB_U: u64 = 1 << 20;

    #[test]
    fn freeing_caches_and_empty_cache_releases() {
        let mut pool = Pool::new(Source::Host, 64 * MIB_U);
        pool.allocate("a", 10 * MIB_U, u64::MAX).unwrap();
        pool.allocate("b", 1000, u64::MAX).unwrap();
        let s = pool.stats();
        assert_eq!(s.allocated_bytes, 10 * MIB_U + 1024);
        assert_eq!(s.reserved_bytes, s.allocated_bytes);
        pool.free("a").unwrap();
        let s = pool.stats();
        assert_eq!(
            (s.allocated_bytes, s.reserved_bytes),
            (1024, 10 * MIB_U + 1024),
            "freed memory stays reserved"
        );
        pool.allocate("c", 4 * MIB_U, u64::MAX).unwrap();
        assert_eq!(
            pool.stats().reserved_bytes,
            10 * MIB_U + 1024,
            "the cached block is reused, not a new one"
        );
        assert_eq!(pool.stats().tensors["c"], 10 * MIB_U);
        pool.free("c").unwrap();
        pool.empty_cache();
        assert_eq!(pool.stats().reserved_bytes, 1024);
        assert!(pool.free("nope").is_err());
        assert!(
            pool.allocate("b", 1, u64::MAX)
                .unwrap_err()
                .to_string()
                .contains("already exists")
        );
    }

    #[test]
    fn passing_the_cap_releases_cache_then_fails_like_pytorch() {
        let mut pool = Pool::new(Source::Host, 8 * MIB_U);
        pool.allocate("x", 3 * MIB_U, u64::MAX).unwrap();
        pool.free("x").unwrap();
        pool.allocate("y", 6 * MIB_U, u64::MAX)
            .expect("the cached 3 MiB is released to make room");
        assert_eq!(pool.stats().reserved_bytes, 6 * MIB_U);
        let err = pool
            .allocate("z", 4 * MIB_U, u64::MAX)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("CUDA out of memory. Tried to allocate 4.00 MiB."),
            "{err}"
        );
        assert!(err.contains("6.00 MiB is allocated"), "{err}");
        assert!(
            pool.allocate("w", MIB_U, 1000)
                .unwrap_err()
                .to_string()
                .contains("shared")
        );
    }

    #[test]
    fn sizes_round_to_512() {
        assert_eq!(
            (round(0), round(1), round(512), round(513)),
            (512, 512, 512, 1024)
        );
    }
}

//! A model of PyTorch's CUDA caching allocator (`c10/cuda/CUDACachingAllocator.cpp`),
//! pure and deterministic, so lesson 7's playground predicts what `memory_allocated()`
//! and `memory_reserved()` say in PyTorch. Every rule below names the function of that
//! file it follows (read at pytorch/pytorch commit 001074d, a 2.x `main`):
//!
//! - `round_size`: a request is rounded up to a multiple of 512 B (`kMinBlockSize`).
//! - `get_pool`: requests of at most 1 MiB (`kSmallSize`) use the small pool, larger
//!   ones the large pool; the pools never share segments.
//! - `get_allocation_size`: a new segment is 2 MiB (`kSmallBuffer`) for the small pool,
//!   20 MiB (`kLargeBuffer`) for requests under 10 MiB (`kMinLargeAlloc`), and the
//!   request rounded up to 2 MiB (`kRoundLarge`) otherwise.
//! - `get_free_block`: best fit — the smallest free block of the pool that is large
//!   enough, the lowest address first among equals — with `max_split_size`'s two
//!   refusals for oversize blocks.
//! - `should_split`: the rest of a block becomes a free block of its own if at least
//!   512 B remain (small pool, or expandable segments), or, in the large pool, if more
//!   than 1 MiB remains and the request is under `max_split_size`.
//! - `free_block`/`try_merge_blocks`: a freed block merges with free neighbours in its
//!   segment.
//! - `malloc`: no fitting block → a new segment (`alloc_block`; refused past the
//!   memory limit, as `set_per_process_memory_fraction` refuses) → release oversize
//!   cached segments (`release_available_cached_blocks`) and retry → release every
//!   entirely free segment (`release_cached_blocks`, what `empty_cache()` does) and
//!   retry → out of memory.
//! - With `expandable_segments:True`, one segment per pool grows by mapping pages
//!   (2 MiB small, 20 MiB large) at its end, and `empty_cache()` unmaps free pages
//!   ([`expandable`]).
//!
//! Simplified away: streams (one stream, so no cross-stream events), CUDA graph pools,
//! `roundup_power2_divisions`, `garbage_collection_threshold` and the free-memory
//! callbacks. Real memory is behind a [`Driver`], which the model asks for each segment
//! (or each page of an expandable segment) and tells when it is given back.

mod expandable;
mod segment;
pub mod sequences;
pub mod snapshot;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use segment::Segment;
pub use segment::{BlockState, BlockView, SegmentView};

/// `kMinBlockSize`: every size is rounded up to a multiple of 512 bytes.
pub const MIN_BLOCK: u64 = 512;
/// `kSmallSize`: the largest request served by the small pool (1 MiB).
pub const SMALL_SIZE: u64 = 1 << 20;
/// `kSmallBuffer`: a small-pool segment (2 MiB).
pub const SMALL_BUFFER: u64 = 2 << 20;
/// `kLargeBuffer`: a large-pool segment for requests under 10 MiB (20 MiB).
pub const LARGE_BUFFER: u64 = 20 << 20;
/// `kMinLargeAlloc`: from here on a request gets a segment of its own size (10 MiB).
pub const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// `kRoundLarge`: large segments are rounded up to 2 MiB.
pub const ROUND_LARGE: u64 = 2 << 20;
/// How many trace entries the model keeps (PyTorch's default `max_entries` is larger;
/// a playground needs only its recent history).
pub const TRACE_ENTRIES: usize = 2000;

/// The options a learner can switch, as `PYTORCH_CUDA_ALLOC_CONF` does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AllocConf {
    /// `expandable_segments:True`: one growing segment per pool instead of many.
    #[serde(default)]
    pub expandable_segments: bool,
    /// `max_split_size_mb:N`: blocks of N MiB or more are never split (at least 20, per
    /// `parseMaxSplitSize` in `c10/core/AllocatorConfig.cpp` of the 2.12+ releases the
    /// course targets; 001074d's `CUDAAllocatorConfig` wanted more than 20); unset
    /// means no limit.
    #[serde(default)]
    pub max_split_size_mb: Option<u64>,
}

impl AllocConf {
    /// `max_split_size` in bytes (`SIZE_MAX` when unset, as in PyTorch).
    pub fn max_split_size(&self) -> u64 {
        self.max_split_size_mb.map_or(u64::MAX, |mb| mb << 20)
    }

    /// The setting as `PYTORCH_CUDA_ALLOC_CONF` spells it ("" for the defaults).
    pub fn env_value(&self) -> String {
        let mut parts = Vec::new();
        if self.expandable_segments {
            parts.push("expandable_segments:True".to_string());
        }
        if let Some(mb) = self.max_split_size_mb {
            parts.push(format!("max_split_size_mb:{mb}"));
        }
        parts.join(",")
    }
}

/// One piece of real memory: a whole segment, or one page of an expandable segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Chunk {
    /// The segment's id.
    pub segment: u64,
    /// The page within an expandable segment (0 for a plain segment).
    pub page: u64,
}

/// Where the model's segments get real memory (`cudaMalloc`/`cuMemMap` in PyTorch).
pub trait Driver {
    /// Asks for `bytes` of memory for `chunk`; `false` means the device is out of
    /// memory (the model then releases cached memory and retries, as PyTorch does).
    fn map(&mut self, chunk: Chunk, bytes: u64) -> bool;
    /// Gives `chunk`'s memory back.
    fn unmap(&mut self, chunk: Chunk);
}

/// One entry of the allocation history, as `torch.cuda.memory._snapshot()` records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceEntry {
    /// `alloc`, `free_requested`, `free_completed`, `segment_alloc`, `segment_free`,
    /// `segment_map`, `segment_unmap` or `oom`.
    pub action: &'static str,
    /// The block's or segment's address (the device's free bytes for `oom`).
    pub addr: u64,
    /// Bytes: requested for a tensor, mapped for a segment.
    pub size: u64,
    /// The tensor's name, for alloc and free entries.
    pub tensor: Option<String>,
    /// Microseconds since the Unix epoch.
    pub time_us: u64,
}

/// Why a `malloc` failed: the figures PyTorch's out-of-memory message states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfMemory {
    /// `alloc_size`: what the allocator tried to get from the device.
    pub tried: u64,
    /// `memory_allocated()` when it gave up.
    pub allocated: u64,
    /// `memory_reserved()` when it gave up (after releasing what it could).
    pub reserved: u64,
}

/// The model: segments of blocks, both pools, the counters and the history.
#[derive(Debug)]
pub struct Allocator {
    conf: AllocConf,
    limit: u64,
    segments: Vec<Segment>,
    next_id: u64,
    next_address: u64,
    allocated: u64,
    reserved: u64,
    trace: VecDeque<TraceEntry>,
}

/// `round_size` (without `roundup_power2_divisions`).
pub fn round_size(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(MIN_BLOCK) * MIN_BLOCK
}

/// `get_allocation_size`: the size of a new segment for a rounded request.
pub fn allocation_size(size: u64) -> u64 {
    if size <= SMALL_SIZE {
        SMALL_BUFFER
    } else if size < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        size.div_ceil(ROUND_LARGE) * ROUND_LARGE
    }
}

/// `format_size`, as PyTorch words sizes in its out-of-memory message.
pub fn format_size(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes <= 1024 {
        format!("{bytes} bytes")
    } else if bytes <= 1 << 20 {
        format!("{:.2} KiB", b / 1024.0)
    } else if bytes <= 1 << 30 {
        format!("{:.2} MiB", b / (1u64 << 20) as f64)
    } else {
        format!("{:.2} GiB", b / (1u64 << 30) as f64)
    }
}

fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

impl Allocator {
    /// An empty allocator with options `conf` that may reserve at most `limit` bytes
    /// (PyTorch's `allowed_memory_maximum` under `set_per_process_memory_fraction`).
    pub fn new(conf: AllocConf, limit: u64) -> Self {
        Self {
            conf,
            limit,
            segments: Vec::new(),
            next_id: 1,
            // Device addresses look like CUDA's; only their order matters.
            next_address: 0x7f00_0000_0000,
            allocated: 0,
            reserved: 0,
            trace: VecDeque::new(),
        }
    }

    /// The options in force.
    pub fn conf(&self) -> AllocConf {
        self.conf
    }

    /// `memory_allocated()`: bytes in blocks that hold tensors.
    pub fn allocated(&self) -> u64 {
        self.allocated
    }

    /// `memory_reserved()`: bytes of segments (mapped pages) held from the device.
    pub fn reserved(&self) -> u64 {
        self.reserved
    }

    /// The bytes this allocator may reserve.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Live tensors by name: (block size, requested size).
    pub fn tensors(&self) -> impl Iterator<Item = (&str, u64, u64)> {
        self.segments.iter().flat_map(|s| {
            s.blocks
                .iter()
                .filter_map(|b| b.tensor.as_deref().map(|t| (t, b.size, b.requested)))
        })
    }

    /// Whether a live tensor is called `name`.
    pub fn holds(&self, name: &str) -> bool {
        self.tensors().any(|(t, _, _)| t == name)
    }

    /// The history, oldest first.
    pub fn trace(&self) -> impl Iterator<Item = &TraceEntry> {
        self.trace.iter()
    }

    fn record(&mut self, action: &'static str, addr: u64, size: u64, tensor: Option<&str>) {
        if self.trace.len() == TRACE_ENTRIES {
            self.trace.pop_front();
        }
        self.trace.push_back(TraceEntry {
            action,
            addr,
            size,
            tensor: tensor.map(str::to_string),
            time_us: now_us(),
        });
    }

    /// `malloc`: a block for tensor `name` of `bytes`, found in the cache or in a new
    /// segment. The caller checks that `name` is free.
    pub fn malloc(
        &mut self,
        name: &str,
        bytes: u64,
        driver: &mut dyn Driver,
    ) -> Result<(), OutOfMemory> {
        let size = round_size(bytes);
        let small = size <= SMALL_SIZE;
        let alloc_size = allocation_size(size);
        let found = match self.free_block(small, size) {
            Some(found) => Some(found),
            None => self
                .alloc_block(small, size, alloc_size, driver)
                .or_else(|| {
                    self.release_available_cached_blocks(small, size, driver)
                        .then(|| self.alloc_block(small, size, alloc_size, driver))
                        .flatten()
                })
                .or_else(|| {
                    self.release_cached_blocks(driver);
                    self.alloc_block(small, size, alloc_size, driver)
                }),
        };
        let Some((s, b)) = found else {
            // Expandable segments left with nothing mapped by a failed try go too.
            self.segments.retain(|seg| seg.mapped_bytes() > 0);
            let free = self.limit.saturating_sub(self.reserved);
            self.record("oom", free, size, Some(name));
            return Err(OutOfMemory {
                tried: alloc_size,
                allocated: self.allocated,
                reserved: self.reserved,
            });
        };
        let split = self.should_split(self.segments[s].blocks[b].size, size, small);
        let segment = &mut self.segments[s];
        if split {
            segment.split(b, size);
        }
        let block = &mut segment.blocks[b];
        block.state = BlockState::Allocated;
        block.tensor = Some(name.to_string());
        block.requested = bytes;
        let (address, block_size) = (block.address, block.size);
        self.allocated += block_size;
        self.record("alloc", address, bytes, Some(name));
        Ok(())
    }

    /// `free`: tensor `name`'s block goes back to the pool and merges with free
    /// neighbours. `false` when no tensor has that name.
    pub fn free(&mut self, name: &str) -> bool {
        let Some((s, b)) = self.find(name) else {
            return false;
        };
        let block = &mut self.segments[s].blocks[b];
        let (address, size, requested) = (block.address, block.size, block.requested);
        block.state = BlockState::Free;
        block.tensor = None;
        self.allocated -= size;
        self.record("free_requested", address, requested, Some(name));
        self.record("free_completed", address, requested, Some(name));
        self.segments[s].merge_free(b);
        true
    }

    /// `emptyCache`: gives every entirely free segment back (and, with expandable
    /// segments, every free page); blocks that share a segment with a live tensor stay.
    pub fn empty_cache(&mut self, driver: &mut dyn Driver) {
        self.release_cached_blocks(driver);
    }

    /// Drops everything, giving all memory back.
    pub fn clear(&mut self, driver: &mut dyn Driver) {
        for segment in std::mem::take(&mut self.segments) {
            for chunk in segment.chunks() {
                driver.unmap(chunk);
            }
        }
        (self.allocated, self.reserved) = (0, 0);
    }

    /// The segments as memory_viz draws them: one per contiguous mapped range.
    pub fn segment_views(&self) -> Vec<SegmentView> {
        let mut views: Vec<SegmentView> = self.segments.iter().flat_map(Segment::views).collect();
        views.sort_by_key(|v| v.address);
        views
    }

    fn find(&self, name: &str) -> Option<(usize, usize)> {
        self.segments.iter().enumerate().find_map(|(s, seg)| {
            seg.blocks
                .iter()
                .position(|b| b.tensor.as_deref() == Some(name))
                .map(|b| (s, b))
        })
    }

    /// `should_split`.
    fn should_split(&self, block_size: u64, size: u64, small: bool) -> bool {
        let remaining = block_size - size;
        if small || self.conf.expandable_segments {
            remaining >= MIN_BLOCK
        } else {
            size < self.conf.max_split_size() && remaining > SMALL_SIZE
        }
    }

    /// `get_free_block`: best fit in the pool, then `max_split_size`'s refusals.
    fn free_block(&self, small: bool, size: u64) -> Option<(usize, usize)> {
        let mut candidates: Vec<(u64, u64, usize, usize)> = Vec::new();
        for (s, seg) in self.segments.iter().enumerate() {
            if seg.small != small || (seg.expandable && !self.conf.expandable_segments) {
                continue;
            }
            for (b, block) in seg.blocks.iter().enumerate() {
                if block.state == BlockState::Free && block.size >= size {
                    candidates.push((block.size, block.address, s, b));
                }
            }
        }
        candidates.sort_unstable();
        let mut pick = 0;
        // A free block at the end of an expandable segment can grow into the unmapped
        // space after it: for best fit it counts as that big, so a later candidate
        // whose room is smaller wins.
        let room = |i: usize| {
            let (_, _, s, b) = candidates[i];
            self.segments[s].expandable_room(b)
        };
        while let Some(&(_, _, s, _)) = candidates.get(pick) {
            if !self.segments[s].expandable
                || pick + 1 >= candidates.len()
                || room(pick + 1) >= room(pick)
            {
                break;
            }
            pick += 1;
        }
        let &(block_size, _, s, b) = candidates.get(pick)?;
        let max_split = self.conf.max_split_size();
        // "Do not return an oversized block for a large request"
        if size < max_split && block_size >= max_split {
            return None;
        }
        // "Allow oversized block size to be rounded up but within a limit"
        if size >= max_split && block_size >= size + LARGE_BUFFER {
            return None;
        }
        Some((s, b))
    }

    /// `alloc_block`: a new segment (or, expandable, new pages) for the request.
    fn alloc_block(
        &mut self,
        small: bool,
        size: u64,
        alloc_size: u64,
        driver: &mut dyn Driver,
    ) -> Option<(usize, usize)> {
        if self.reserved + alloc_size > self.limit {
            return None;
        }
        if self.conf.expandable_segments {
            return self.allocate_expandable(small, size, driver);
        }
        let id = self.next_id;
        if !driver.map(
            Chunk {
                segment: id,
                page: 0,
            },
            alloc_size,
        ) {
            return None;
        }
        self.next_id += 1;
        let address = self.next_address;
        self.next_address += alloc_size.div_ceil(ROUND_LARGE) * ROUND_LARGE;
        self.segments
            .push(Segment::plain(id, address, alloc_size, small));
        self.reserved += alloc_size;
        self.record("segment_alloc", address, alloc_size, None);
        Some((self.segments.len() - 1, 0))
    }

    /// `release_available_cached_blocks`: with `max_split_size` set, free oversize
    /// cached segments — the best-fitting one, or the largest ones until enough.
    fn release_available_cached_blocks(
        &mut self,
        small: bool,
        size: u64,
        driver: &mut dyn Driver,
    ) -> bool {
        let Some(mb) = self.conf.max_split_size_mb else {
            return false;
        };
        let max_split = mb << 20;
        let key = size.max(max_split);
        let mut free: Vec<(u64, u64, u64)> = self
            .segments
            .iter()
            .filter(|s| s.small == small && !s.expandable && s.is_entirely_free())
            .map(|s| (s.blocks[0].size, s.address, s.id))
            .collect();
        free.sort_unstable();
        if let Some(&(_, _, id)) = free.iter().find(|(sz, _, _)| *sz >= key) {
            self.release_segment(id, driver);
            return true;
        }
        let mut released = 0;
        for &(sz, _, id) in free.iter().rev() {
            if released >= key || sz < max_split {
                break;
            }
            released += sz;
            self.release_segment(id, driver);
        }
        released >= key
    }

    /// `release_cached_blocks`: every entirely free segment goes back to the device;
    /// expandable segments unmap their free pages.
    fn release_cached_blocks(&mut self, driver: &mut dyn Driver) {
        let whole: Vec<u64> = self
            .segments
            .iter()
            .filter(|s| !s.expandable && s.is_entirely_free())
            .map(|s| s.id)
            .collect();
        for id in whole {
            self.release_segment(id, driver);
        }
        self.unmap_free_pages(driver);
    }

    /// `release_block`: `cudaFree` of one whole segment.
    fn release_segment(&mut self, id: u64, driver: &mut dyn Driver) {
        let Some(i) = self.segments.iter().position(|s| s.id == id) else {
            return;
        };
        let segment = self.segments.remove(i);
        for chunk in segment.chunks() {
            driver.unmap(chunk);
        }
        let size = segment.mapped_bytes();
        self.reserved -= size;
        self.record("segment_free", segment.address, size, None);
    }
}

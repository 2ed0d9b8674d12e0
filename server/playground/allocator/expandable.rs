//! `expandable_segments:True` (PyTorch's Note [Expandable Segments]): instead of one
//! `cudaMalloc` per segment, each pool reserves a large address range and maps
//! physical pages into it as needed — 2 MiB pages for the small pool, 20 MiB for the
//! large one (`find_expandable_block`'s `segment_size`). A request that fits no free
//! block maps pages at the lowest address where free and unmapped space together are
//! large enough (`try_allocate_expandable_block`, `map_block`), so blocks tile one
//! growing segment instead of leaving slivers at the end of many. `empty_cache()`
//! unmaps every whole page inside a free block (`release_blocks`, `unmap_block`), and a
//! segment left with nothing mapped is released.

use super::segment::{Block, BlockState, Segment};
use super::{Allocator, Chunk, Driver, LARGE_BUFFER, SMALL_BUFFER};

impl Allocator {
    /// `try_allocate_expandable_block`: a free block of at least `size` bytes, mapping
    /// pages as needed.
    pub(super) fn allocate_expandable(
        &mut self,
        small: bool,
        size: u64,
        driver: &mut dyn Driver,
    ) -> Option<(usize, usize)> {
        let (s, mut c) = self.find_expandable_block(small, size);
        if self.segments[s].blocks[c].state == BlockState::Unmapped {
            let want = self.segments[s].blocks[c].size.min(size);
            c = self.map_block(s, c, want, driver)?;
        }
        while self.segments[s].blocks[c].size < size {
            let remaining = size - self.segments[s].blocks[c].size;
            let next = self.segments[s].blocks.get(c + 1)?;
            let want = remaining.min(next.size);
            c = self.map_block(s, c + 1, want, driver)?;
        }
        Some((s, c))
    }

    /// `find_expandable_block`: the lowest address, in any of the pool's expandable
    /// segments, where free and unmapped blocks together hold `size`; or a new segment.
    fn find_expandable_block(&mut self, small: bool, size: u64) -> (usize, usize) {
        for (s, seg) in self.segments.iter().enumerate() {
            if !seg.expandable || seg.small != small {
                continue;
            }
            for (u, block) in seg.blocks.iter().enumerate() {
                if block.state != BlockState::Unmapped {
                    continue;
                }
                let start = if u > 0 && seg.blocks[u - 1].state == BlockState::Free {
                    u - 1
                } else {
                    u
                };
                let room: u64 = seg.blocks[start..]
                    .iter()
                    .take_while(|b| b.state != BlockState::Allocated)
                    .map(|b| b.size)
                    .sum();
                if room >= size {
                    return (s, start);
                }
            }
        }
        let page = if small { SMALL_BUFFER } else { LARGE_BUFFER };
        // PyTorch reserves 1 1/8 of the GPU's memory as address space; here, of the limit.
        let span = (self.limit + self.limit / 8).max(size).div_ceil(page) * page;
        let (id, address) = (self.next_id, self.next_address);
        self.next_id += 1;
        self.next_address += span;
        self.segments.push(Segment {
            id,
            address,
            small,
            expandable: true,
            page,
            blocks: vec![Block::new(address, span, BlockState::Unmapped)],
        });
        (self.segments.len() - 1, 0)
    }

    /// `map_block`: maps whole pages covering the first `bytes` of unmapped block `u`;
    /// the mapped part becomes free and merges with a free block before it. Returns
    /// the merged free block, or `None` when the device refuses a page.
    fn map_block(
        &mut self,
        s: usize,
        u: usize,
        bytes: u64,
        driver: &mut dyn Driver,
    ) -> Option<usize> {
        let seg = &self.segments[s];
        let block = &seg.blocks[u];
        let mapped = bytes
            .div_ceil(seg.page)
            .saturating_mul(seg.page)
            .min(block.size);
        if self.reserved + mapped > self.limit {
            return None;
        }
        let first = (block.address - seg.address) / seg.page;
        let (id, page, address) = (seg.id, seg.page, block.address);
        for i in 0..mapped / page {
            if !driver.map(
                Chunk {
                    segment: id,
                    page: first + i,
                },
                page,
            ) {
                for j in 0..i {
                    driver.unmap(Chunk {
                        segment: id,
                        page: first + j,
                    });
                }
                return None;
            }
        }
        let seg = &mut self.segments[s];
        if mapped < seg.blocks[u].size {
            seg.split(u, mapped);
        }
        seg.blocks[u].state = BlockState::Free;
        let merged = seg.merge_free(u);
        self.reserved += mapped;
        self.record("segment_map", address, mapped, None);
        Some(merged)
    }

    /// `release_blocks` for expandable segments: unmap the whole pages inside every
    /// free block; release a segment with nothing mapped.
    pub(super) fn unmap_free_pages(&mut self, driver: &mut dyn Driver) {
        for s in 0..self.segments.len() {
            if !self.segments[s].expandable {
                continue;
            }
            let mut b = 0;
            while b < self.segments[s].blocks.len() {
                b = self.unmap_block(s, b, driver) + 1;
            }
        }
        self.segments.retain(|seg| {
            !(seg.expandable && seg.blocks.iter().all(|b| b.state == BlockState::Unmapped))
        });
    }

    /// `unmap_block`: unmaps the pages wholly inside free block `b`; returns the index
    /// of the last block that came out of it.
    fn unmap_block(&mut self, s: usize, b: usize, driver: &mut dyn Driver) -> usize {
        let seg = &mut self.segments[s];
        let block = &seg.blocks[b];
        if block.state != BlockState::Free {
            return b;
        }
        let (base, page) = (seg.address, seg.page);
        let start = (block.address - base).div_ceil(page) * page + base;
        let end = (block.address + block.size - base) / page * page + base;
        if end <= start {
            return b;
        }
        let mut u = b;
        if start > block.address {
            seg.split(u, start - seg.blocks[u].address);
            u += 1;
        }
        if end < seg.blocks[u].address + seg.blocks[u].size {
            seg.split(u, end - start);
        }
        for p in (start - base) / page..(end - base) / page {
            driver.unmap(Chunk {
                segment: seg.id,
                page: p,
            });
        }
        seg.blocks[u].state = BlockState::Unmapped;
        let after_free = u + 1 < seg.blocks.len() && seg.blocks[u + 1].state == BlockState::Free;
        let merged = seg.merge_free(u);
        self.reserved -= end - start;
        self.record("segment_unmap", start, end - start, None);
        if after_free { merged + 1 } else { merged }
    }
}

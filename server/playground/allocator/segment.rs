//! A segment and its blocks: the address-ordered list PyTorch keeps through each
//! block's `prev`/`next` pointers, with the split and merge steps of
//! `alloc_found_block` and `try_merge_blocks`.

use serde::Serialize;

use super::Chunk;

/// What a block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BlockState {
    /// A live tensor (`active_allocated` in a snapshot).
    Allocated,
    /// Cached, free for reuse (`inactive`).
    Free,
    /// Address space of an expandable segment with no memory behind it.
    Unmapped,
}

/// One block.
#[derive(Debug, Clone)]
pub(super) struct Block {
    pub address: u64,
    pub size: u64,
    /// Bytes the tensor asked for (before rounding); 0 when free.
    pub requested: u64,
    pub state: BlockState,
    pub tensor: Option<String>,
}

/// One segment: a `cudaMalloc` (plain) or a reserved address range that grows page by
/// page (expandable). Its blocks cover it without gaps, in address order.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    pub id: u64,
    pub address: u64,
    pub small: bool,
    pub expandable: bool,
    /// Page size of an expandable segment.
    pub page: u64,
    pub blocks: Vec<Block>,
}

/// A block as the playground draws it.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct BlockView {
    /// Device address.
    pub address: u64,
    /// Bytes (a multiple of 512).
    pub size: u64,
    /// Bytes asked for (0 for a free block).
    pub requested_size: u64,
    /// `allocated` or `free`.
    pub state: BlockState,
    /// The tensor in it.
    pub tensor: Option<String>,
}

/// A segment as the playground draws it (for an expandable segment, one contiguous
/// mapped range, as PyTorch's snapshot reports it).
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct SegmentView {
    /// Device address of its first byte.
    pub address: u64,
    /// Bytes reserved for it.
    pub total_size: u64,
    /// `small` or `large`.
    pub segment_type: &'static str,
    /// Part of an expandable segment.
    pub is_expandable: bool,
    /// Its blocks in address order.
    pub blocks: Vec<BlockView>,
}

impl Block {
    pub(super) fn new(address: u64, size: u64, state: BlockState) -> Self {
        Self {
            address,
            size,
            requested: 0,
            state,
            tensor: None,
        }
    }
}

impl Segment {
    /// A plain segment of `size` bytes, one free block.
    pub(super) fn plain(id: u64, address: u64, size: u64, small: bool) -> Self {
        Self {
            id,
            address,
            small,
            expandable: false,
            page: size,
            blocks: vec![Block::new(address, size, BlockState::Free)],
        }
    }

    /// Whether no block holds a tensor and nothing is unmapped.
    pub(super) fn is_entirely_free(&self) -> bool {
        self.blocks.len() == 1 && self.blocks[0].state == BlockState::Free
    }

    /// Bytes with memory behind them.
    pub(super) fn mapped_bytes(&self) -> u64 {
        self.blocks
            .iter()
            .filter(|b| b.state != BlockState::Unmapped)
            .map(|b| b.size)
            .sum()
    }

    /// The pieces of real memory behind the segment.
    pub(super) fn chunks(&self) -> Vec<Chunk> {
        if !self.expandable {
            return vec![Chunk {
                segment: self.id,
                page: 0,
            }];
        }
        let mut pages = Vec::new();
        for b in self
            .blocks
            .iter()
            .filter(|b| b.state != BlockState::Unmapped)
        {
            let first = (b.address - self.address) / self.page;
            let last = (b.address + b.size - self.address).div_ceil(self.page);
            pages.extend((first..last).map(|page| Chunk {
                segment: self.id,
                page,
            }));
        }
        pages.dedup();
        pages
    }

    /// How far free block `b` could grow: its size plus the unmapped space after it.
    pub(super) fn expandable_room(&self, b: usize) -> u64 {
        let size = self.blocks[b].size;
        match self.blocks.get(b + 1) {
            Some(next) if next.state == BlockState::Unmapped => size + next.size,
            _ => size,
        }
    }

    /// Splits block `b` so that it is `size` bytes; the rest becomes the next block,
    /// in the same state (`alloc_found_block`'s `remaining`).
    pub(super) fn split(&mut self, b: usize, size: u64) {
        let block = &mut self.blocks[b];
        let rest = Block::new(block.address + size, block.size - size, block.state);
        block.size = size;
        self.blocks.insert(b + 1, rest);
    }

    /// Merges block `b` with neighbours in the same state, free with free and unmapped
    /// with unmapped (`try_merge_blocks`); returns the merged block's index.
    pub(super) fn merge_free(&mut self, b: usize) -> usize {
        let state = self.blocks[b].state;
        debug_assert_ne!(state, BlockState::Allocated);
        let mut b = b;
        if self.blocks.get(b + 1).is_some_and(|n| n.state == state) {
            let next = self.blocks.remove(b + 1);
            self.blocks[b].size += next.size;
        }
        if b > 0 && self.blocks[b - 1].state == state {
            let this = self.blocks.remove(b);
            b -= 1;
            self.blocks[b].size += this.size;
        }
        b
    }

    /// The mapped ranges as views.
    pub(super) fn views(&self) -> Vec<SegmentView> {
        let mut views: Vec<SegmentView> = Vec::new();
        let mut open = false;
        for block in &self.blocks {
            if block.state == BlockState::Unmapped {
                open = false;
                continue;
            }
            if !open {
                views.push(SegmentView {
                    address: block.address,
                    total_size: 0,
                    segment_type: if self.small { "small" } else { "large" },
                    is_expandable: self.expandable,
                    blocks: Vec::new(),
                });
                open = true;
            }
            let view = views.last_mut().expect("opened above");
            view.total_size += block.size;
            view.blocks.push(BlockView {
                address: block.address,
                size: block.size,
                requested_size: block.requested,
                state: block.state,
                tensor: block.tensor.clone(),
            });
        }
        views
    }
}

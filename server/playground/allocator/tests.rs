//! Each rule of the model against the function of PyTorch's
//! `c10/cuda/CUDACachingAllocator.cpp` (pytorch/pytorch commit 001074d, 2.x `main`)
//! that it follows; the test names say which.

use std::collections::BTreeMap;

use super::*;

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

/// A device with `budget` bytes that records what is mapped.
struct FakeDevice {
    budget: u64,
    mapped: BTreeMap<Chunk, u64>,
}

impl FakeDevice {
    fn new(budget: u64) -> Self {
        Self {
            budget,
            mapped: BTreeMap::new(),
        }
    }
    fn used(&self) -> u64 {
        self.mapped.values().sum()
    }
}

impl Driver for FakeDevice {
    fn map(&mut self, chunk: Chunk, bytes: u64) -> bool {
        assert!(!self.mapped.contains_key(&chunk), "{chunk:?} mapped twice");
        if self.used() + bytes > self.budget {
            return false;
        }
        self.mapped.insert(chunk, bytes);
        true
    }
    fn unmap(&mut self, chunk: Chunk) {
        assert!(
            self.mapped.remove(&chunk).is_some(),
            "{chunk:?} was not mapped"
        );
    }
}

/// Runs `steps` ("name=MiB" allocates, "-name" frees, "empty" empties the cache) and
/// returns (allocated, reserved) in MiB after each, checking that the device holds
/// exactly what the model reserves.
fn run(conf: AllocConf, limit_mib: u64, steps: &[&str]) -> Vec<(f64, f64)> {
    let mut a = Allocator::new(conf, limit_mib * MIB);
    let mut dev = FakeDevice::new(u64::MAX);
    let mut out = Vec::new();
    for step in steps {
        if *step == "empty" {
            a.empty_cache(&mut dev);
        } else if let Some(name) = step.strip_prefix('-') {
            assert!(a.free(name), "{name} is live");
        } else {
            let (name, mib) = step.split_once('=').unwrap();
            let bytes = (mib.parse::<f64>().unwrap() * MIB as f64) as u64;
            a.malloc(name, bytes, &mut dev)
                .unwrap_or_else(|e| panic!("{step}: {e:?}"));
        }
        assert_eq!(dev.used(), a.reserved(), "after {step}");
        out.push((
            a.allocated() as f64 / MIB as f64,
            a.reserved() as f64 / MIB as f64,
        ));
    }
    out
}

fn mib(pairs: &[(u64, u64)]) -> Vec<(f64, f64)> {
    pairs.iter().map(|&(a, r)| (a as f64, r as f64)).collect()
}

#[test]
fn the_issue_sequence_ends_at_9_of_22_mib_as_in_pytorch() {
    let got = run(
        AllocConf::default(),
        1024,
        &["a=1", "b=4", "c=10", "-c", "d=4"],
    );
    assert_eq!(got, mib(&[(1, 2), (5, 22), (15, 22), (5, 22), (9, 22)]));
}

#[test]
fn round_size_rounds_up_to_k_min_block_size_512() {
    assert_eq!(
        [
            round_size(0),
            round_size(1),
            round_size(512),
            round_size(513),
            round_size(1000)
        ],
        [512, 512, 512, 1024, 1024]
    );
}

#[test]
fn get_pool_and_get_allocation_size_pick_the_segment_size() {
    // kSmallSize: <= 1 MiB is small, packed in kSmallBuffer (2 MiB) segments.
    assert_eq!(allocation_size(SMALL_SIZE), 2 * MIB);
    // 1 MiB < size < kMinLargeAlloc (10 MiB): a kLargeBuffer (20 MiB) segment.
    assert_eq!(allocation_size(SMALL_SIZE + 512), 20 * MIB);
    assert_eq!(allocation_size(10 * MIB - 512), 20 * MIB);
    // From 10 MiB: the request rounded up to kRoundLarge (2 MiB).
    assert_eq!(allocation_size(10 * MIB), 10 * MIB);
    assert_eq!(allocation_size(11 * MIB), 12 * MIB);
}

#[test]
fn a_1_mib_tensor_alone_reserves_a_2_mib_small_segment_and_small_tensors_share_it() {
    let steps = ["a=1", "b=1", "c=1"];
    assert_eq!(
        run(AllocConf::default(), 64, &steps),
        mib(&[(1, 2), (2, 2), (3, 4)])
    );
    // should_split, small pool: any remainder of at least 512 B is kept: three 600 KiB
    // tensors (614,400 B each) fit one 2 MiB segment.
    let kib600 = 600.0 * KIB as f64 / MIB as f64;
    let s = format!("{kib600}");
    let steps: Vec<String> = ["x", "y", "z"].iter().map(|n| format!("{n}={s}")).collect();
    let steps: Vec<&str> = steps.iter().map(String::as_str).collect();
    let last = *run(AllocConf::default(), 64, &steps).last().unwrap();
    assert_eq!(last.1, 2.0, "one segment holds all three");
}

#[test]
fn should_split_large_pool_keeps_a_remainder_only_when_it_is_over_1_mib() {
    // 19.5 MiB gets its own 20 MiB segment; the 0.5 MiB left is not > kSmallSize, so
    // the tensor's block is the whole segment and memory_allocated() counts 20 MiB.
    assert_eq!(run(AllocConf::default(), 64, &["a=19.5"]), mib(&[(20, 20)]));
    // 4 MiB in a 20 MiB segment leaves 16 MiB: split off and reusable.
    assert_eq!(
        run(AllocConf::default(), 64, &["a=4", "b=15"]),
        mib(&[(4, 20), (20, 20)])
    );
}

#[test]
fn get_free_block_is_best_fit() {
    // Free 12 MiB and 16 MiB segments: an 11 MiB request takes the 12 MiB block (its
    // 1 MiB rest is not split off), not the first or the largest.
    let mut a = Allocator::new(AllocConf::default(), 256 * MIB);
    let mut dev = FakeDevice::new(u64::MAX);
    for (n, m) in [("x", 12), ("y", 16)] {
        a.malloc(n, m * MIB, &mut dev).unwrap();
    }
    a.free("y");
    a.free("x");
    a.malloc("z", 11 * MIB, &mut dev).unwrap();
    assert_eq!(
        a.tensors().collect::<Vec<_>>(),
        vec![("z", 12 * MIB, 11 * MIB)]
    );
    assert_eq!(a.reserved(), 28 * MIB);
}

#[test]
fn free_block_merges_with_free_neighbours_in_its_segment() {
    let mut a = Allocator::new(AllocConf::default(), 256 * MIB);
    let mut dev = FakeDevice::new(u64::MAX);
    for n in ["a", "b", "c"] {
        a.malloc(n, 4 * MIB, &mut dev).unwrap();
    }
    let blocks = |a: &Allocator| -> Vec<(u64, BlockState)> {
        a.segment_views()[0]
            .blocks
            .iter()
            .map(|b| (b.size / MIB, b.state))
            .collect()
    };
    a.free("a");
    a.free("c");
    use BlockState::{Allocated as A, Free as F};
    assert_eq!(
        blocks(&a),
        vec![(4, F), (4, A), (12, F)],
        "c merged with the tail"
    );
    a.free("b");
    assert_eq!(blocks(&a), vec![(20, F)], "one free block again");
    // The whole 20 MiB block is found again: an 18 MiB request splits it (2 MiB > 1 MiB).
    a.malloc("d", 18 * MIB, &mut dev).unwrap();
    assert_eq!(blocks(&a), vec![(18, A), (2, F)]);
    assert_eq!(a.reserved(), 20 * MIB);
}

#[test]
fn empty_cache_releases_only_entirely_free_segments() {
    let steps = ["a=4", "b=12", "c=1", "-b", "-c", "empty"];
    let got = run(AllocConf::default(), 256, &steps);
    // b's own 12 MiB segment and c's 2 MiB segment go back; a's 20 MiB segment stays,
    // 16 MiB of it cached, because a lives in it.
    assert_eq!(got.last(), Some(&(4.0, 20.0)));
}

/// The fragmentation sequence of lesson 7 (and of tests/gpu/allocator_sequences.json):
/// 12 MiB is cached but in 4 MiB holes, so a 16 MiB tensor needs a new segment.
const FRAGMENT: [&str; 8] = ["a=4", "b=4", "c=4", "d=4", "-a", "-c", "e=6", "f=16"];

#[test]
fn a_failed_request_reports_the_segment_it_asked_for_not_the_tensor() {
    // PyTorch's message prints `alloc_size`, `get_allocation_size(round_size(n))`:
    // a 4 MiB tensor that does not fit "tried to allocate" its 20 MiB segment.
    let mut a = Allocator::new(AllocConf::default(), 16 * MIB);
    let mut dev = FakeDevice::new(u64::MAX);
    let oom = a.malloc("t", 4 * MIB, &mut dev).unwrap_err();
    assert_eq!(oom.tried, 20 * MIB);
    let oom = a.malloc("u", 17 * MIB - 1000, &mut dev).unwrap_err();
    assert_eq!(oom.tried, 18 * MIB, "from 10 MiB on, rounded up to 2 MiB");
    a.malloc("v", MIB, &mut dev).unwrap();
    assert_eq!(a.reserved(), 2 * MIB);
}

#[test]
fn malloc_releases_cache_and_retries_then_fails_with_pytorchs_figures() {
    let mut a = Allocator::new(AllocConf::default(), 40 * MIB);
    let mut dev = FakeDevice::new(u64::MAX);
    for step in &FRAGMENT[..7] {
        if let Some(n) = step.strip_prefix('-') {
            a.free(n);
        } else {
            let (n, m) = step.split_once('=').unwrap();
            a.malloc(n, m.parse::<u64>().unwrap() * MIB, &mut dev)
                .unwrap();
        }
    }
    assert_eq!((a.allocated(), a.reserved()), (14 * MIB, 40 * MIB));
    let oom = a.malloc("f", 16 * MIB, &mut dev).unwrap_err();
    assert_eq!(
        oom,
        OutOfMemory {
            tried: 16 * MIB,
            allocated: 14 * MIB,
            reserved: 40 * MIB
        },
        "26 MiB reserved but unallocated, yet no hole of 16 MiB"
    );
    assert_eq!(a.trace().last().unwrap().action, "oom");
    // A cached segment that is entirely free is released before giving up.
    let (mut a, mut dev) = (
        Allocator::new(AllocConf::default(), 40 * MIB),
        FakeDevice::new(u64::MAX),
    );
    a.malloc("x", 4 * MIB, &mut dev).unwrap();
    a.malloc("y", 12 * MIB, &mut dev).unwrap();
    a.free("y");
    a.malloc("z", 17 * MIB, &mut dev)
        .expect("y's segment is released first");
    assert_eq!((a.allocated(), a.reserved()), (22 * MIB, 38 * MIB));
}

#[test]
fn the_device_refusing_memory_also_triggers_release_and_retry() {
    let mut a = Allocator::new(AllocConf::default(), 1024 * MIB);
    let mut dev = FakeDevice::new(32 * MIB);
    a.malloc("x", 12 * MIB, &mut dev).unwrap();
    a.free("x");
    a.malloc("y", 30 * MIB, &mut dev)
        .expect("x's cached 12 MiB is given back first");
    assert_eq!(dev.used(), 30 * MIB);
    assert!(a.malloc("z", 4 * MIB, &mut dev).is_err());
}

#[test]
fn expandable_segments_grow_one_segment_and_avoid_the_fragmentation_oom() {
    let conf = AllocConf {
        expandable_segments: true,
        max_split_size_mb: None,
    };
    let got = run(conf, 40, &FRAGMENT);
    // e maps one more 20 MiB page after the free 4 MiB tail: one 24 MiB free run, so
    // f (16 MiB) fits where plain segments ran out of memory.
    assert_eq!(got[6], (14.0, 40.0));
    assert_eq!(got[7], (30.0, 40.0));
    // Small requests map 2 MiB pages, large ones 20 MiB pages.
    assert_eq!(
        run(conf, 64, &["a=1", "b=1", "c=1"]),
        mib(&[(1, 2), (2, 2), (3, 4)])
    );
    assert_eq!(run(conf, 64, &["a=4"]), mib(&[(4, 20)]));
}

#[test]
fn expandable_empty_cache_unmaps_only_whole_free_pages() {
    let conf = AllocConf {
        expandable_segments: true,
        max_split_size_mb: None,
    };
    // a at 0–4 MiB, big at 4–44, c at 44–48: three 20 MiB pages. Freeing big frees
    // 4–44, which wholly contains only the page 20–40.
    let got = run(
        conf,
        256,
        &["a=4", "big=40", "c=4", "-big", "empty", "-a", "-c", "empty"],
    );
    assert_eq!(got[2], (48.0, 60.0));
    assert_eq!(got[4], (8.0, 40.0));
    assert_eq!(got[7], (0.0, 0.0));
}

#[test]
fn max_split_size_keeps_oversize_blocks_whole() {
    let conf = AllocConf {
        expandable_segments: false,
        max_split_size_mb: Some(30),
    };
    // A free 40 MiB block is not handed to an 8 MiB request ("Do not return an
    // oversized block for a large request"): a new 20 MiB segment is made.
    assert_eq!(
        run(conf, 256, &["x=40", "-x", "y=8"]).last(),
        Some(&(8.0, 60.0))
    );
    // A request of at least max_split_size takes an oversize block less than 20 MiB
    // (kLargeBuffer) larger, whole (never split).
    assert_eq!(
        run(conf, 256, &["x=40", "-x", "w=36"]).last(),
        Some(&(40.0, 40.0))
    );
    // ... but not one 20 MiB or more larger.
    assert_eq!(
        run(conf, 256, &["x=60", "-x", "w=36"]).last(),
        Some(&(36.0, 96.0))
    );
    // release_available_cached_blocks: under the limit, the oversize cached block goes
    // back to the device before the new segment is made.
    assert_eq!(
        run(conf, 100, &["x=40", "-x", "y=8", "z=50"]).last(),
        Some(&(58.0, 70.0))
    );
}

#[test]
fn pytorchs_format_size_words_sizes() {
    assert_eq!(format_size(1024), "1024 bytes");
    assert_eq!(format_size(1536), "1.50 KiB");
    assert_eq!(format_size(20 * MIB), "20.00 MiB");
    assert_eq!(format_size(3 << 30), "3.00 GiB");
}

#[test]
fn the_trace_records_segments_allocations_and_frees() {
    let mut a = Allocator::new(AllocConf::default(), 64 * MIB);
    let mut dev = FakeDevice::new(u64::MAX);
    a.malloc("w", 3 * MIB, &mut dev).unwrap();
    a.free("w");
    a.empty_cache(&mut dev);
    let actions: Vec<&str> = a.trace().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [
            "segment_alloc",
            "alloc",
            "free_requested",
            "free_completed",
            "segment_free"
        ]
    );
    let alloc = a.trace().nth(1).unwrap();
    assert_eq!((alloc.size, alloc.tensor.as_deref()), (3 * MIB, Some("w")));
}

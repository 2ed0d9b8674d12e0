//! The playground's state and history in the shape `torch.cuda.memory._snapshot()`
//! returns (documented in `torch/cuda/memory.py`'s `_snapshot`, read by
//! `torch/cuda/_memory_viz.py` and pytorch.org/memory_viz): `segments`, each with its
//! `blocks`, and `device_traces`, one list of trace entries per device. Built as JSON
//! values so it crosses a worker's answer unchanged; [`to_pickle`] writes the file
//! memory_viz opens.

use serde_json::{Value, json};

use super::{Allocator, BlockState, TraceEntry};

/// The stack "frame" memory_viz shows for a block: the playground's line of Python.
fn frames(tensor: Option<&str>, requested: u64) -> Value {
    match tensor {
        Some(name) => json!([{
            "filename": "allocator_playground.py",
            "line": 1,
            "name": format!("{name} = torch.empty({requested}, dtype=torch.uint8, device='cuda')"),
        }]),
        None => json!([]),
    }
}

fn trace_entry(e: &TraceEntry) -> Value {
    let mut entry = json!({
        "action": e.action,
        "addr": e.addr,
        "size": e.size,
        "stream": 0,
        "time_us": e.time_us,
        "frames": frames(e.tensor.as_deref(), e.size),
    });
    if e.action == "oom" {
        // For an OOM PyTorch records the device's free bytes where the address goes.
        entry["device_free"] = json!(e.addr);
    }
    entry
}

/// The snapshot of `allocator` as JSON.
pub fn snapshot(allocator: &Allocator) -> Value {
    let segments: Vec<Value> = allocator
        .segment_views()
        .into_iter()
        .map(|seg| {
            let allocated: u64 = seg
                .blocks
                .iter()
                .filter(|b| b.state == BlockState::Allocated)
                .map(|b| b.size)
                .sum();
            let requested: u64 = seg.blocks.iter().map(|b| b.requested_size).sum();
            let blocks: Vec<Value> = seg
                .blocks
                .iter()
                .map(|b| {
                    let allocated = b.state == BlockState::Allocated;
                    json!({
                        "address": b.address,
                        "size": b.size,
                        "requested_size": b.requested_size,
                        "state": if allocated { "active_allocated" } else { "inactive" },
                        "frames": frames(b.tensor.as_deref(), b.requested_size),
                    })
                })
                .collect();
            json!({
                "device": 0,
                "address": seg.address,
                "total_size": seg.total_size,
                "stream": 0,
                "segment_type": seg.segment_type,
                "allocated_size": allocated,
                "active_size": allocated,
                "requested_size": requested,
                "is_expandable": seg.is_expandable,
                "blocks": blocks,
            })
        })
        .collect();
    let conf = allocator.conf();
    json!({
        "segments": segments,
        "device_traces": [allocator.trace().map(trace_entry).collect::<Vec<_>>()],
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": conf.env_value(),
            "max_split_size": conf.max_split_size_mb.map_or(-1, |mb| (mb << 20) as i64),
            "expandable_segments": conf.expandable_segments,
        },
    })
}

/// `snapshot` as a pickle (protocol 3), the file `torch.cuda.memory._dump_snapshot`
/// writes and memory_viz opens.
pub fn to_pickle(snapshot: &Value) -> Vec<u8> {
    serde_pickle::to_vec(snapshot, serde_pickle::SerOptions::new())
        .expect("a JSON value always pickles")
}

//! Experiment: host↔device transfer bandwidth (lesson 4). Follows nvbandwidth's method:
//! pinned buffers from `cuMemHostAlloc` with flags 0 (not write-combined), events
//! created with `CU_EVENT_DEFAULT`, warm-up copies, several copies per sample, several
//! samples, the median and spread reported, GB = 1e9 bytes. Pageable copies are timed
//! with a host clock around copies followed by a stream synchronise. The CPU backend
//! measures `memcpy` bandwidth between two host buffers at the same sizes.

use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use serde::{Deserialize, Serialize};

use super::cuda::CudaHandle;
use super::stats::{Summary, summarize};
use super::{PAST_LIMIT_TRY_SMALLER, check_deadline};

/// Smallest size measured.
pub const MIN_BYTES: u64 = 1024;
/// Warm-up copies before each size.
pub const WARMUPS: usize = 2;
/// Samples per size.
pub const SAMPLES: usize = 7;

/// What the student asks for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferParams {
    /// Largest transfer in bytes (capped by the server).
    pub max_bytes: u64,
}

/// One measured size in one direction and memory kind.
#[derive(Debug, Clone, Serialize)]
pub struct TransferPoint {
    /// `h2d`, `d2h`, or `h2h` (CPU backend memcpy).
    pub direction: &'static str,
    /// `pinned` or `pageable`.
    pub memory: &'static str,
    /// Bytes per copy.
    pub bytes: u64,
    /// Bandwidth in GB/s (1e9 bytes per second) over the samples.
    pub gbps: Summary,
}

/// The whole sweep.
#[derive(Debug, Clone, Serialize)]
pub struct TransferResult {
    /// Every measurement.
    pub points: Vec<TransferPoint>,
    /// The PCIe link's theoretical one-direction peak in GB/s, when known.
    pub link_peak_gbps: Option<f64>,
}

/// Sizes from 1 KiB up to `max_bytes`, ×4 each step, ending at `max_bytes`.
pub fn sizes(max_bytes: u64) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut size = MIN_BYTES;
    while size < max_bytes {
        sizes.push(size);
        size *= 4;
    }
    sizes.push(max_bytes.max(MIN_BYTES));
    sizes
}

/// Copies per sample: enough that small copies are not all launch overhead.
pub fn copies_per_sample(bytes: u64) -> usize {
    (64 * 1024 * 1024 / bytes.max(1)).clamp(1, 32) as usize
}

fn gbps(bytes: u64, copies: usize, seconds: f64) -> f64 {
    bytes as f64 * copies as f64 / seconds / 1e9
}

/// The CPU backend: `memcpy` between two host buffers.
pub fn run_cpu(params: &TransferParams, deadline: Instant) -> Result<TransferResult, String> {
    let max = usize::try_from(params.max_bytes).map_err(|_| "size too large for this machine")?;
    let src = vec![1u8; max];
    let mut dst = vec![0u8; max];
    let mut points = Vec::new();
    for bytes in sizes(params.max_bytes) {
        let n = bytes as usize;
        let copies = copies_per_sample(bytes);
        for _ in 0..WARMUPS {
            dst[..n].copy_from_slice(&src[..n]);
        }
        let mut samples = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            check_deadline(deadline, PAST_LIMIT_TRY_SMALLER)?;
            let start = Instant::now();
            for _ in 0..copies {
                dst[..n].copy_from_slice(std::hint::black_box(&src[..n]));
                std::hint::black_box(&mut dst);
            }
            samples.push(gbps(bytes, copies, start.elapsed().as_secs_f64().max(1e-9)));
        }
        let gbps = summarize(&samples).ok_or("no valid samples")?;
        points.push(TransferPoint {
            direction: "h2h",
            memory: "pageable",
            bytes,
            gbps,
        });
    }
    Ok(TransferResult {
        points,
        link_peak_gbps: None,
    })
}

/// The CUDA backend: H2D and D2H from pinned and pageable memory.
pub fn run_cuda(
    gpu: &CudaHandle,
    params: &TransferParams,
    deadline: Instant,
) -> Result<TransferResult, String> {
    let max = usize::try_from(params.max_bytes).map_err(|_| "size too large for this machine")?;
    fn e(what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> String {
        move |err| format!("{what}: {err}")
    }
    let stream = &gpu.stream;
    let mut device = stream
        .alloc_zeros::<u8>(max)
        .map_err(e("device allocation failed"))?;
    // SAFETY: flags 0 asks for plain page-locked memory (as nvbandwidth does); the
    // buffer is filled below before any copy reads it.
    let mut pinned = unsafe { gpu.ctx.alloc_pinned_with_flags::<u8>(max, 0) }
        .map_err(e("pinned allocation failed"))?;
    let pinned_slice = pinned
        .as_mut_slice()
        .map_err(e("pinned buffer unavailable"))?;
    pinned_slice.fill(1);
    let mut pageable = vec![1u8; max];
    let start_event = gpu
        .ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(e("event creation failed"))?;
    let end_event = gpu
        .ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(e("event creation failed"))?;

    let mut points = Vec::new();
    for bytes in sizes(params.max_bytes) {
        let n = bytes as usize;
        let copies = copies_per_sample(bytes);
        for (direction, memory) in [
            ("h2d", "pinned"),
            ("d2h", "pinned"),
            ("h2d", "pageable"),
            ("d2h", "pageable"),
        ] {
            let mut copy = |times: usize| -> Result<(), String> {
                for _ in 0..times {
                    let mut view = device.slice_mut(..n);
                    match (direction, memory) {
                        ("h2d", "pinned") => stream.memcpy_htod(&pinned_slice[..n], &mut view),
                        ("d2h", "pinned") => stream.memcpy_dtoh(&view, &mut pinned_slice[..n]),
                        ("h2d", _) => stream.memcpy_htod(&pageable[..n], &mut view),
                        _ => stream.memcpy_dtoh(&view, &mut pageable[..n]),
                    }
                    .map_err(e("copy failed"))?;
                }
                Ok(())
            };
            copy(WARMUPS)?;
            stream.synchronize().map_err(e("synchronise failed"))?;
            let mut samples = Vec::with_capacity(SAMPLES);
            for _ in 0..SAMPLES {
                check_deadline(deadline, PAST_LIMIT_TRY_SMALLER)?;
                let seconds = if memory == "pinned" {
                    start_event
                        .record(stream)
                        .map_err(e("event record failed"))?;
                    copy(copies)?;
                    end_event.record(stream).map_err(e("event record failed"))?;
                    f64::from(
                        start_event
                            .elapsed_ms(&end_event)
                            .map_err(e("event timing failed"))?,
                    ) / 1e3
                } else {
                    let start = Instant::now();
                    copy(copies)?;
                    stream.synchronize().map_err(e("synchronise failed"))?;
                    start.elapsed().as_secs_f64()
                };
                samples.push(gbps(bytes, copies, seconds.max(1e-9)));
            }
            let gbps = summarize(&samples).ok_or("no valid samples")?;
            points.push(TransferPoint {
                direction,
                memory,
                bytes,
                gbps,
            });
        }
    }
    Ok(TransferResult {
        points,
        link_peak_gbps: gpu.card.pcie.as_ref().map(|p| p.peak_gbps),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sizes_run_from_one_kib_to_the_cap() {
        assert_eq!(sizes(1024), vec![1024]);
        assert_eq!(sizes(16 * 1024), vec![1024, 4096, 16384]);
        let s = sizes(1 << 30);
        assert_eq!((s[0], *s.last().unwrap(), s.len()), (1024, 1 << 30, 11));
        assert_eq!(*sizes(10_000).last().unwrap(), 10_000);
    }

    #[test]
    fn the_cpu_sweep_measures_real_bandwidth() {
        let result = run_cpu(
            &TransferParams { max_bytes: 1 << 20 },
            Instant::now() + Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(result.points.len(), sizes(1 << 20).len());
        for p in &result.points {
            assert!(
                p.gbps.median > 0.0 && p.gbps.min <= p.gbps.median && p.gbps.median <= p.gbps.max
            );
            assert_eq!(p.gbps.samples, SAMPLES);
        }
    }

    #[test]
    fn a_past_deadline_stops_the_sweep() {
        let err = run_cpu(
            &TransferParams { max_bytes: 4096 },
            Instant::now() - Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(err.contains("time limit"));
    }
}

//! Experiment: host↔device transfer bandwidth (lesson 4). Follows nvbandwidth's method:
//! pinned buffers from `cuMemHostAlloc` with flags 0 (not write-combined), timing
//! events with `CU_EVENT_DEFAULT`, a warm-up, several copies per sample, several
//! samples, the median and spread reported, GB = 1e9 bytes. Pageable copies are timed
//! with the same events as pinned ones, so the gap between the two curves — at small
//! sizes too — is the memory's, not a difference of clocks (the events bracket the
//! driver's staging through its own pinned buffer). The CPU backend measures `memcpy`
//! bandwidth between two host buffers at the same sizes. The trace draws every timed
//! sample (a batch of back-to-back copies) from the same clock readings.

use std::fmt::Write as _;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked, no_gpu};
use super::trace::{Trace, TraceBuilder, bytes_label};
use super::{Experiment, ExperimentError, Rule};
use crate::config::Limits;
use crate::gpu::Gpu;
use crate::gpu::copies::{CopyQueue, DriverQueue, PinnedBytes};
use crate::gpu::standin::StandIn;
use crate::measure::recorded::Recorded;
use crate::measure::{Deadline, HostClock, Reps, Summary, repeat};

/// Smallest size measured.
pub const MIN_BYTES: u64 = 1024;
/// Timed samples per size, after one untimed warm-up sample.
pub const REPS: Reps = Reps {
    warmups: 1,
    timed: 7,
};

/// What the student asks for.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TransferParams {
    /// Largest copy in bytes; sizes run from 1 KiB, ×4 each step (capped by the server).
    pub max_bytes: u64,
}

impl Default for TransferParams {
    fn default() -> Self {
        Self { max_bytes: 1 << 30 }
    }
}

/// One measured size in one direction and memory kind.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TransferPoint {
    /// `h2d`, `d2h`, or `h2h` (CPU backend memcpy).
    pub direction: &'static str,
    /// `pinned` or `pageable`.
    pub memory: &'static str,
    /// Bytes per copy.
    pub bytes: u64,
    /// Back-to-back copies timed together as one sample (reference tools repeat this).
    pub copies: usize,
    /// Bandwidth in GB/s (1e9 bytes per second) over the samples.
    pub gbps: Summary,
}

/// The whole sweep.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TransferResult {
    /// Every measurement.
    pub points: Vec<TransferPoint>,
    /// The PCIe link's theoretical one-direction peak in GB/s, when known.
    pub link_peak_gbps: Option<f64>,
    /// Every timed sample on the stream (or the CPU), as a Chrome trace.
    pub trace: Trace,
}

/// A span's name: `H→D pinned 1 MiB × 32`.
fn copy_name(direction: &str, memory: &str, bytes: u64, copies: usize) -> String {
    let way = match direction {
        "h2d" => "H→D",
        "d2h" => "D→H",
        _ => "memcpy",
    };
    let memory = if direction == "h2h" { "" } else { memory };
    let name = format!("{way} {memory} {} × {copies}", bytes_label(bytes));
    name.split_whitespace().collect::<Vec<_>>().join(" ")
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

fn gigabytes(bytes: u64, copies: usize) -> f64 {
    bytes as f64 * copies as f64 / 1e9
}

/// A pageable host buffer whose bytes start on a page boundary. A plain `Vec<u8>` this
/// large comes from `mmap` through malloc and starts 16 bytes into a page, so every
/// 64-byte line of the driver's staging copy straddles two cache lines; PyTorch's CPU
/// allocator aligns to 64 bytes (c10's `gAlignment`). Aligning ours to the page puts
/// both sides on whole lines, so the comparison measures the copy, not the offset.
struct PageAligned {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl PageAligned {
    const PAGE: usize = 4096;

    fn filled(len: usize, value: u8) -> Self {
        let storage = vec![value; len + Self::PAGE];
        let start = storage.as_ptr().align_offset(Self::PAGE).min(Self::PAGE);
        Self {
            storage,
            start,
            len,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

fn host_buffer(bytes: u64) -> Result<usize, ExperimentError> {
    usize::try_from(bytes)
        .map_err(|_| ExperimentError::Failed("size too large for this machine".into()))
}

/// The experiment.
pub struct Transfer;

impl Experiment for Transfer {
    const NAME: &'static str = "transfer";
    const DIRECTIVE: &'static str = "transfer-benchmark";
    const LESSON: &'static str = "where-tensors-live";
    const TITLE: &'static str = "Host-device transfer benchmark";
    const SUMMARY: &'static str = "Host↔device bandwidth, pinned and pageable, 1 KiB up to max_bytes (memcpy on a CPU server)";
    type Params = TransferParams;
    type Output = TransferResult;
    const SIZE_BOUNDS: &'static [u64] = &[MIN_BYTES];

    const PREDICT: &'static [Quantity] = &[
        Quantity {
            key: "transfer.pinned_h2d_gbps",
            unit: "GB/s",
            scale: Scale::Ratio,
            on: On::Gpu,
            when: None,
        },
        Quantity {
            key: "transfer.memcpy_gbps",
            unit: "GB/s",
            scale: Scale::Ratio,
            on: On::Cpu,
            when: None,
        },
    ];

    fn measure(key: &str, _: &TransferParams, r: &TransferResult) -> Option<f64> {
        let (direction, memory) = match key {
            "transfer.pinned_h2d_gbps" => ("h2d", "pinned"),
            "transfer.memcpy_gbps" => ("h2h", "pageable"),
            _ => return None,
        };
        r.points
            .iter()
            .filter(|p| p.direction == direction && p.memory == memory)
            .max_by_key(|p| p.bytes)
            .map(|p| p.gbps.median)
    }

    fn rules(limits: &Limits) -> Vec<Rule> {
        vec![Rule::Range {
            field: "max_bytes",
            min: MIN_BYTES,
            max: limits.max_transfer_bytes,
            cap: true,
        }]
    }

    fn method(_: &TransferParams) -> String {
        format!(
            "per size, {} untimed warm-up sample, then {} samples of several back-to-back copies each; pinned and pageable copies both timed with CUDA events on the copy stream; median and min/max reported; GB = 1e9 bytes",
            REPS.warmups, REPS.timed
        )
    }

    fn run_cpu(
        params: &TransferParams,
        deadline: &Deadline,
    ) -> Result<TransferResult, ExperimentError> {
        let max = host_buffer(params.max_bytes)?;
        let src = vec![1u8; max];
        let mut dst = vec![0u8; max];
        let mut host = HostClock::default();
        let mut clock = Recorded::new(&mut host, Instant::now());
        let mut trace =
            TraceBuilder::new("transfer", false, "the host's monotonic clock (Instant)");
        let track = trace.track("CPU: memcpy between two host buffers");
        let mut points = Vec::new();
        for bytes in sizes(params.max_bytes) {
            let (n, copies) = (bytes as usize, copies_per_sample(bytes));
            let ms = repeat::<_, ExperimentError>(&mut clock, REPS, deadline, || {
                for _ in 0..copies {
                    dst[..n].copy_from_slice(std::hint::black_box(&src[..n]));
                    std::hint::black_box(&mut dst);
                }
                Ok(())
            })?;
            let name = copy_name("h2h", "pageable", bytes, copies);
            trace.samples(track, &name, "copy", &clock.take());
            points.push(TransferPoint {
                direction: "h2h",
                memory: "pageable",
                bytes,
                copies,
                gbps: ms.per_second(gigabytes(bytes, copies)),
            });
        }
        Ok(TransferResult {
            points,
            link_peak_gbps: None,
            trace: trace.finish(),
        })
    }

    fn run_gpu(
        gpu: &mut Gpu,
        params: &TransferParams,
        deadline: &Deadline,
    ) -> Result<TransferResult, ExperimentError> {
        let max = host_buffer(params.max_bytes)?;
        let stream = gpu.stream().clone();
        let mut device = stream.zeros::<u8>(max)?;
        let mut pinned = gpu.pinned::<u8>(max)?;
        let pinned = pinned.as_mut_slice()?;
        pinned.fill(1);
        let mut pageable = PageAligned::filled(max, 1);
        let pageable = pageable.as_mut_slice();
        let mut events = gpu.event_clock()?;
        let mut events = Recorded::new(&mut events, Instant::now());
        let mut trace = TraceBuilder::new(
            "transfer",
            true,
            "CUDA events around each sample, placed at the host time its start event was recorded",
        );
        let track = trace.track("GPU stream: copies");
        let mut points = Vec::new();
        for bytes in sizes(params.max_bytes) {
            let (n, copies) = (bytes as usize, copies_per_sample(bytes));
            for (direction, memory) in [
                ("h2d", "pinned"),
                ("d2h", "pinned"),
                ("h2d", "pageable"),
                ("d2h", "pageable"),
            ] {
                let host_side: &mut [u8] = if memory == "pinned" {
                    &mut pinned[..n]
                } else {
                    &mut pageable[..n]
                };
                let work = || -> Result<(), ExperimentError> {
                    for _ in 0..copies {
                        if direction == "h2d" {
                            stream.copy_to_device(host_side, &mut device)?;
                        } else {
                            stream.copy_to_host(&device, host_side)?;
                        }
                    }
                    Ok(())
                };
                let ms = repeat(&mut events, REPS, deadline, work)?;
                let name = copy_name(direction, memory, bytes, copies);
                trace.samples(track, &name, "copy", &events.take());
                points.push(TransferPoint {
                    direction,
                    memory,
                    bytes,
                    copies,
                    gbps: ms.per_second(gigabytes(bytes, copies)),
                });
            }
        }
        Ok(TransferResult {
            points,
            link_peak_gbps: gpu.card().pcie.as_ref().map(|p| p.peak_gbps),
            trace: trace.finish(),
        })
    }

    fn table(_: &TransferParams, result: &TransferResult) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Transfer bandwidth (GB/s = 1e9 B/s; median [min, max] of {} samples)",
            REPS.timed
        );
        let _ = writeln!(
            out,
            "{:>14}  {:>4}  {:>8}  {:>10}  {:>21}",
            "bytes", "dir", "memory", "median", "spread"
        );
        for p in &result.points {
            let _ = writeln!(
                out,
                "{:>14}  {:>4}  {:>8}  {:>10.2}  [{:>8.2}, {:>8.2}]",
                p.bytes, p.direction, p.memory, p.gbps.median, p.gbps.min, p.gbps.max
            );
        }
        if let Some(peak) = result.link_peak_gbps {
            let _ = writeln!(
                out,
                "PCIe link theoretical peak: {peak:.1} GB/s per direction"
            );
        }
        out
    }

    fn describe(params: &TransferParams) -> String {
        format!(
            "Copies host to device and device to host, from pageable and from pinned memory, at sizes from 1 KiB up to {} bytes, and plots bandwidth in GB/s against size with the link's theoretical peak.",
            crate::format::thousands(params.max_bytes as f64)
        )
    }

    fn selftest(gpu: Option<&mut Gpu>) -> Vec<Check> {
        let deadline = Deadline::after(std::time::Duration::from_secs(60));
        let params = TransferParams { max_bytes: 70_000 };
        let expected = sizes(params.max_bytes);
        let shape = |r: &TransferResult, per_size: usize| {
            let bytes: Vec<u64> = r.points.iter().map(|p| p.bytes).collect();
            let ok = r.points.len() == expected.len() * per_size
                && expected.iter().all(|s| bytes.contains(s))
                && r.points.iter().all(|p| {
                    p.gbps.min > 0.0 && p.gbps.min <= p.gbps.median && p.gbps.median <= p.gbps.max
                });
            (
                ok,
                format!("{} points over sizes {expected:?}", r.points.len()),
            )
        };
        let mut checks = vec![checked(
            "transfer: CPU sweep sizes, byte counts and spreads",
            Transfer::run_cpu(&params, &deadline),
            |r| shape(r, 1),
        )];
        match gpu {
            Some(gpu) => {
                checks.push(checked(
                    "transfer: GPU sweep sizes, byte counts and spreads",
                    Transfer::run_gpu(gpu, &params, &deadline),
                    |r| shape(r, 4),
                ));
                checks.push(round_trips_arrive(
                    gpu,
                    "transfer: pinned and pageable round trips arrive byte for byte",
                ));
            }
            None => {
                checks.push(no_gpu("transfer: GPU sweep"));
                checks.push(round_trips_arrive_on_the_stand_in(
                    "transfer: pinned and pageable round trips arrive byte for byte (asynchronous stand-in)",
                ));
            }
        }
        checks
    }
}

/// Check `name`: pinned and pageable round trips of an odd size (1 MiB + 123 bytes)
/// arrive byte for byte, on `gpu`'s stream. The transfer selftest runs it, and the
/// start-up self-test (`engine::first_contact`).
pub fn round_trips_arrive(gpu: &mut Gpu, name: &str) -> Check {
    checked(
        name,
        round_trips(&DriverQueue::on(gpu), ROUND_TRIP_BYTES),
        |wrong| (*wrong == 0, format!("{wrong} bytes differ")),
    )
}

/// The same round trips on the CPU's stand-in for a GPU (`gpu::standin`), which runs
/// every copy as late as a driver may: what the CPU self-tests run, so an ordering bug
/// in the round trip fails in CI as it would on a GPU.
pub fn round_trips_arrive_on_the_stand_in(name: &str) -> Check {
    checked(
        name,
        round_trips(&StandIn::new(), ROUND_TRIP_BYTES),
        |wrong| {
            (
                *wrong == 0,
                format!("{wrong} bytes differ on the asynchronous stand-in"),
            )
        },
    )
}

/// An odd size, so copies of part of a buffer are exercised.
const ROUND_TRIP_BYTES: usize = (1 << 20) + 123;

/// The round trips' pattern: byte i is i·31 mod 251 (0 once in 251 bytes).
fn pattern(bytes: usize) -> Vec<u8> {
    (0..bytes).map(|i| (i * 31 % 251) as u8).collect()
}

/// Copies a pattern host→device→host through pinned and pageable memory on `queue`;
/// returns how many bytes came back wrong. Each copy to or from the pinned buffer is
/// waited for before the host touches the buffer again (run 1 on an H200 overwrote
/// the source of a copy still queued, and carried the zeros).
fn round_trips<Q: CopyQueue>(queue: &Q, bytes: usize) -> Result<usize, ExperimentError> {
    let pattern = pattern(bytes);
    let mut device = queue.device(bytes + 4096)?;
    let mut pinned = queue.pinned(bytes)?;
    pinned.write(|b| b[..bytes].copy_from_slice(&pattern))?;
    queue.pinned_to_device(&pinned, &mut device)?.wait()?;
    pinned.write(|b| b.fill(0))?;
    queue.device_to_pinned(&device, &mut pinned)?.wait()?;
    let mut wrong = differing(&pinned.read()?[..bytes], &pattern);
    let mut pageable = pattern.iter().rev().copied().collect::<Vec<u8>>();
    let reversed = pageable.clone();
    queue.pageable_to_device(&pageable, &mut device)?;
    pageable.fill(0);
    queue.device_to_pageable(&device, &mut pageable)?;
    wrong += differing(&pageable, &reversed);
    Ok(wrong)
}

fn differing(got: &[u8], want: &[u8]) -> usize {
    got.iter().zip(want).filter(|(a, b)| a != b).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_round_trips_pass_on_the_stand_in_and_run_1s_order_fails_there_as_on_the_h200() {
        assert_eq!(round_trips(&StandIn::new(), ROUND_TRIP_BYTES).unwrap(), 0);
        // Run 1's order (4d2ce35): queue the copy from the pinned buffer, overwrite the
        // buffer, then sync. The guard makes that a compile error (gpu::copies); the
        // one way around it in safe Rust is to forget the guard, which is run 1's code.
        let queue = StandIn::new();
        let pattern = pattern(ROUND_TRIP_BYTES);
        let mut device = queue.device(ROUND_TRIP_BYTES + 4096).unwrap();
        let mut pinned = queue.pinned(ROUND_TRIP_BYTES).unwrap();
        pinned.write(|b| b.copy_from_slice(&pattern)).unwrap();
        std::mem::forget(queue.pinned_to_device(&pinned, &mut device).unwrap());
        pinned.write(|b| b.fill(0)).unwrap();
        queue
            .device_to_pinned(&device, &mut pinned)
            .unwrap()
            .wait()
            .unwrap();
        let wrong = differing(&pinned.read().unwrap(), &pattern);
        // Every byte of the pattern that is not 0: exactly what the H200 reported.
        assert_eq!(wrong, 1_044_520);
    }

    #[test]
    fn the_pageable_buffer_starts_on_a_page() {
        for len in [1, 4095, 1 << 20, (1 << 20) + 123] {
            let mut buffer = PageAligned::filled(len, 7);
            let bytes = buffer.as_mut_slice();
            assert_eq!(bytes.len(), len);
            assert_eq!(bytes.as_ptr() as usize % PageAligned::PAGE, 0);
            assert!(bytes.iter().all(|&b| b == 7));
        }
    }

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
        let result = Transfer::run_cpu(
            &TransferParams { max_bytes: 1 << 20 },
            &Deadline::after(Duration::from_secs(30)),
        )
        .unwrap();
        assert_eq!(result.points.len(), sizes(1 << 20).len());
        for p in &result.points {
            assert!(
                p.gbps.median > 0.0 && p.gbps.min <= p.gbps.median && p.gbps.median <= p.gbps.max
            );
            // At least the planned samples; more when a noisy machine kept the spread
            // from settling.
            assert!(p.gbps.samples >= REPS.timed, "{} samples", p.gbps.samples);
        }
        // Each point's samples are on the trace under its name, every one counted.
        let last = result.points.last().unwrap();
        let name = copy_name("h2h", "pageable", last.bytes, last.copies);
        assert_eq!(
            name,
            "memcpy 1 MiB × 64".replace("64", &last.copies.to_string())
        );
        let events: Vec<_> = result
            .trace
            .trace_events
            .iter()
            .filter(|e| e.ph == "X" && e.name.starts_with(&name))
            .collect();
        let counted: usize = events.iter().map(|e| e.args.count.unwrap_or(1)).sum();
        assert_eq!(counted, last.gbps.samples);
        let gbps = last.bytes as f64 * last.copies as f64 / 1e9 / (events[0].dur.unwrap() / 1e6);
        assert!(gbps >= last.gbps.min * 0.999 && gbps <= last.gbps.max * 1.001);
    }

    #[test]
    fn copies_are_named_by_way_memory_and_size() {
        assert_eq!(
            copy_name("h2d", "pinned", 1 << 20, 32),
            "H→D pinned 1 MiB × 32"
        );
        assert_eq!(
            copy_name("d2h", "pageable", 1 << 30, 1),
            "D→H pageable 1 GiB × 1"
        );
        assert_eq!(copy_name("h2h", "pageable", 4096, 32), "memcpy 4 KiB × 32");
    }

    #[test]
    fn a_past_deadline_stops_the_sweep() {
        let deadline = Deadline::after(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
        let err = Transfer::run_cpu(&TransferParams { max_bytes: 4096 }, &deadline).unwrap_err();
        assert!(err.to_string().contains("time limit"));
    }
}

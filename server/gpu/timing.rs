//! Experiment: the timing trap and the two-lane timeline (lesson 5). A known amount of
//! work is queued as `LAUNCHES` kernels; the result reports three clocks (a host timer
//! that stops when the launches return, a host timer that first synchronises, and the
//! device's own timestamps) and, per launch, when the launch call ran on the CPU and
//! when the kernel ran on the device.
//!
//! On the GPU the work is the `busy_f32` kernel, calibrated to about `TARGET_KERNEL_MS`
//! each, timed with CUDA events. On the CPU backend a worker thread plays the GPU's
//! stream: the host hands it work and returns at once, exactly the asynchrony that
//! makes the trap, and the worker stamps when each piece ran.

use std::sync::mpsc;
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use serde::Serialize;

use super::cpu;
use super::cuda::CudaHandle;

/// Kernels queued per run.
pub const LAUNCHES: usize = 8;
/// Device time each kernel is calibrated to.
pub const TARGET_KERNEL_MS: f64 = 5.0;

/// One bar on a timeline lane, in milliseconds from the start of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Span {
    /// `launch 3`, `kernel 3`.
    pub label: String,
    /// Start, ms.
    pub start_ms: f64,
    /// End, ms.
    pub end_ms: f64,
}

/// The three clocks and the timeline.
#[derive(Debug, Clone, Serialize)]
pub struct TimingResult {
    /// Host timer stopped right after the last launch returned (no synchronise).
    pub host_no_sync_ms: f64,
    /// Host timer stopped after synchronising with the device.
    pub host_sync_ms: f64,
    /// Device timestamps: first kernel start to last kernel end.
    pub device_ms: f64,
    /// How many times the unsynchronised timer under-reports.
    pub underestimate_factor: f64,
    /// CPU lane: each launch call.
    pub cpu_lane: Vec<Span>,
    /// Device lane: each kernel's execution.
    pub device_lane: Vec<Span>,
}

fn finish(
    host_no_sync_ms: f64,
    host_sync_ms: f64,
    cpu_lane: Vec<Span>,
    device_lane: Vec<Span>,
) -> TimingResult {
    let device_ms = match (device_lane.first(), device_lane.last()) {
        (Some(first), Some(last)) => last.end_ms - first.start_ms,
        _ => 0.0,
    };
    TimingResult {
        host_no_sync_ms,
        host_sync_ms,
        device_ms,
        underestimate_factor: host_sync_ms / host_no_sync_ms.max(1e-6),
        cpu_lane,
        device_lane,
    }
}

fn ms_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1e3
}

/// The CPU backend: a worker thread stands in for the GPU's stream.
pub fn run_cpu() -> Result<TimingResult, String> {
    // Calibrate the busy loop to TARGET_KERNEL_MS on this CPU.
    let probe = 2_000_000u64;
    let start = Instant::now();
    cpu::busy(probe);
    let per_iteration_ms = ms_since(start) / probe as f64;
    let iterations = (TARGET_KERNEL_MS / per_iteration_ms.max(1e-9)) as u64;

    let (work_tx, work_rx) = mpsc::channel::<usize>();
    let (done_tx, done_rx) = mpsc::channel::<(usize, f64, f64)>();
    let t0 = Instant::now();
    let stream = std::thread::spawn(move || {
        for i in work_rx {
            let s = ms_since(t0);
            cpu::busy(iterations);
            let _ = done_tx.send((i, s, ms_since(t0)));
        }
    });
    let mut cpu_lane = Vec::with_capacity(LAUNCHES);
    for i in 0..LAUNCHES {
        let s = ms_since(t0);
        work_tx.send(i).map_err(|_| "the CPU stream stopped")?;
        cpu_lane.push(Span {
            label: format!("launch {i}"),
            start_ms: s,
            end_ms: ms_since(t0),
        });
    }
    let host_no_sync_ms = ms_since(t0);
    drop(work_tx);
    let mut device_lane: Vec<Span> = done_rx
        .iter()
        .map(|(i, s, e)| Span {
            label: format!("kernel {i}"),
            start_ms: s,
            end_ms: e,
        })
        .collect();
    stream.join().map_err(|_| "the CPU stream panicked")?;
    let host_sync_ms = ms_since(t0);
    device_lane.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    Ok(finish(host_no_sync_ms, host_sync_ms, cpu_lane, device_lane))
}

/// The CUDA backend: `busy_f32` kernels timed with events.
pub fn run_cuda(gpu: &mut CudaHandle) -> Result<TimingResult, String> {
    let err = |e: cudarc::driver::DriverError| e.to_string();
    let busy = gpu.function("busy_f32")?;
    let stream = std::sync::Arc::clone(&gpu.stream);
    let sms = u64::from(gpu.card.sm_count.unwrap_or(80));
    let n: u64 = sms * 2048;
    let mut out = stream.alloc_zeros::<f32>(n as usize).map_err(err)?;
    let config = LaunchConfig {
        grid_dim: (u32::try_from(sms * 8).unwrap_or(1024), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let event = || {
        gpu.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)
    };
    let launch =
        |iterations: u32, out: &mut cudarc::driver::CudaSlice<f32>| -> Result<(), String> {
            let mut builder = stream.launch_builder(&busy);
            builder.arg(out).arg(&n).arg(&iterations);
            // SAFETY: busy_f32(float* out, u64 n, u32 iterations) writes out[0..n) with a
            // grid-stride loop, and `out` holds n floats.
            unsafe { builder.launch(config) }.map(|_| ()).map_err(err)
        };
    // Calibrate: time one kernel, then scale the loop count to the target.
    let (a, b) = (event()?, event()?);
    let probe = 4096u32;
    launch(probe, &mut out)?;
    a.record(&stream).map_err(err)?;
    launch(probe, &mut out)?;
    b.record(&stream).map_err(err)?;
    let probe_ms = f64::from(a.elapsed_ms(&b).map_err(err)?).max(1e-3);
    let iterations = ((f64::from(probe) * TARGET_KERNEL_MS / probe_ms) as u32).clamp(1, 50_000_000);

    let origin = event()?;
    let marks: Vec<_> = (0..=LAUNCHES).map(|_| event()).collect::<Result<_, _>>()?;
    let t0 = Instant::now();
    origin.record(&stream).map_err(err)?;
    let mut cpu_lane = Vec::with_capacity(LAUNCHES);
    marks[0].record(&stream).map_err(err)?;
    for i in 0..LAUNCHES {
        let s = ms_since(t0);
        launch(iterations, &mut out)?;
        marks[i + 1].record(&stream).map_err(err)?;
        cpu_lane.push(Span {
            label: format!("launch {i}"),
            start_ms: s,
            end_ms: ms_since(t0),
        });
    }
    let host_no_sync_ms = ms_since(t0);
    stream.synchronize().map_err(err)?;
    let host_sync_ms = ms_since(t0);
    let at = |e: &cudarc::driver::CudaEvent| origin.elapsed_ms(e).map(f64::from).map_err(err);
    let mut device_lane = Vec::with_capacity(LAUNCHES);
    for i in 0..LAUNCHES {
        device_lane.push(Span {
            label: format!("kernel {i}"),
            start_ms: at(&marks[i])?,
            end_ms: at(&marks[i + 1])?,
        });
    }
    Ok(finish(host_no_sync_ms, host_sync_ms, cpu_lane, device_lane))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_stream_shows_the_trap() {
        let r = run_cpu().unwrap();
        assert_eq!(
            (r.cpu_lane.len(), r.device_lane.len()),
            (LAUNCHES, LAUNCHES)
        );
        assert!(
            r.host_sync_ms >= r.device_ms * 0.9,
            "sync timer covers the work: {r:?}"
        );
        assert!(
            r.host_no_sync_ms < r.host_sync_ms,
            "returning from launches is faster than the work: {r:?}"
        );
        assert!(r.underestimate_factor > 1.0);
        for pair in r.device_lane.windows(2) {
            assert!(
                pair[1].start_ms >= pair[0].end_ms - 1e-6,
                "work runs in order, one after another"
            );
        }
    }
}

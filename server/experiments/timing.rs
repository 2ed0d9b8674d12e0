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

use std::fmt::Write as _;
use std::sync::mpsc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked, no_gpu};
use super::{Experiment, ExperimentError, Rule};
use crate::config::Limits;
use crate::cpu;
use crate::gpu::Gpu;
use crate::measure::{Clock, Deadline};

/// Kernels queued per run.
pub const LAUNCHES: usize = 8;
/// Device time each kernel is calibrated to.
pub const TARGET_KERNEL_MS: f64 = 5.0;

/// The timing trap takes no parameters.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TimingParams {}

/// One bar on a timeline lane, in milliseconds from the start of the run.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Span {
    /// `launch 3`, `kernel 3`.
    pub label: String,
    /// Start, ms.
    pub start_ms: f64,
    /// End, ms.
    pub end_ms: f64,
}

/// The three clocks and the timeline.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
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
fn run_cpu() -> Result<TimingResult, ExperimentError> {
    let iterations = cpu::busy_iterations_for_ms(TARGET_KERNEL_MS);
    let stopped = || ExperimentError::Failed("the CPU stream stopped".into());
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
        work_tx.send(i).map_err(|_| stopped())?;
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
    stream.join().map_err(|_| stopped())?;
    let host_sync_ms = ms_since(t0);
    device_lane.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    Ok(finish(host_no_sync_ms, host_sync_ms, cpu_lane, device_lane))
}

/// The CUDA backend: `busy_f32` kernels timed with events.
fn run_gpu(gpu: &mut Gpu) -> Result<TimingResult, ExperimentError> {
    let kernels = gpu.kernels();
    let stream = gpu.stream().clone();
    let sms = gpu.card().sm_count.unwrap_or(80);
    let mut out = stream.zeros::<f32>(sms as usize * 2048)?;
    let blocks = sms.saturating_mul(8).min(65_535);
    // Calibrate: time one kernel, then scale the loop count to the target.
    let probe = 4096u32;
    kernels.busy(&stream, &mut out, probe, blocks)?;
    let mut clock = gpu.event_clock()?;
    clock.start()?;
    kernels.busy(&stream, &mut out, probe, blocks)?;
    let probe_ms = clock.stop()?.max(1e-3);
    let iterations = ((f64::from(probe) * TARGET_KERNEL_MS / probe_ms) as u32).clamp(1, 50_000_000);

    let mut marks = gpu.marks();
    let t0 = Instant::now();
    marks.record(&stream)?;
    let mut cpu_lane = Vec::with_capacity(LAUNCHES);
    for i in 0..LAUNCHES {
        let s = ms_since(t0);
        kernels.busy(&stream, &mut out, iterations, blocks)?;
        marks.record(&stream)?;
        cpu_lane.push(Span {
            label: format!("launch {i}"),
            start_ms: s,
            end_ms: ms_since(t0),
        });
    }
    let host_no_sync_ms = ms_since(t0);
    stream.sync()?;
    let host_sync_ms = ms_since(t0);
    let at = marks.offsets_ms()?;
    let device_lane = (0..LAUNCHES)
        .map(|i| Span {
            label: format!("kernel {i}"),
            start_ms: at[i],
            end_ms: at[i + 1],
        })
        .collect();
    Ok(finish(host_no_sync_ms, host_sync_ms, cpu_lane, device_lane))
}

/// The experiment.
pub struct Timing;

impl Experiment for Timing {
    const NAME: &'static str = "timing";
    const DIRECTIVE: &'static str = "timing-trap";
    const LESSON: &'static str = "async-and-timing";
    const TITLE: &'static str = "The timing trap, measured";
    const SUMMARY: &'static str =
        "The timing trap: host timer without sync, with sync, and device timestamps";
    type Params = TimingParams;
    type Output = TimingResult;

    const PREDICT: &'static [Quantity] = &[Quantity {
        key: "timing.underestimate_factor",
        unit: "×",
        scale: Scale::Ratio,
        on: On::Any,
        when: None,
    }];

    fn measure(key: &str, _: &TimingParams, r: &TimingResult) -> Option<f64> {
        (key == "timing.underestimate_factor").then_some(r.underestimate_factor)
    }

    fn rules(_: &Limits) -> Vec<Rule> {
        Vec::new()
    }

    fn method(_: &TimingParams) -> String {
        format!(
            "{LAUNCHES} kernels of about {TARGET_KERNEL_MS} ms each queued back to back; host clock read after the launches return, host clock after synchronising, and device timestamps (CUDA events on a GPU; the worker thread's clock on the CPU backend)"
        )
    }

    fn run_gpu(
        gpu: &mut Gpu,
        _: &TimingParams,
        deadline: &Deadline,
    ) -> Result<TimingResult, ExperimentError> {
        deadline.check()?;
        run_gpu(gpu)
    }

    fn run_cpu(_: &TimingParams, deadline: &Deadline) -> Result<TimingResult, ExperimentError> {
        deadline.check()?;
        run_cpu()
    }

    fn table(_: &TimingParams, r: &TimingResult) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "host timer, no sync : {:>8.2} ms", r.host_no_sync_ms);
        let _ = writeln!(out, "host timer, sync    : {:>8.2} ms", r.host_sync_ms);
        let _ = writeln!(out, "device timestamps   : {:>8.2} ms", r.device_ms);
        let _ = writeln!(
            out,
            "the unsynchronised timer is {:.1}x too low",
            r.underestimate_factor
        );
        out
    }

    fn describe(_: &TimingParams) -> String {
        "Queues a known amount of GPU work and reports three clocks: a host timer without synchronising, a host timer with synchronising, and CUDA events; then draws when each launch returned on the CPU and when each kernel ran on the GPU.".to_string()
    }

    fn selftest(gpu: Option<&mut Gpu>) -> Vec<Check> {
        let judge = |r: &TimingResult| {
            let ordered = r
                .device_lane
                .windows(2)
                .all(|p| p[1].start_ms >= p[0].end_ms - 1e-3);
            let ok = r.device_lane.len() == LAUNCHES
                && ordered
                && r.host_no_sync_ms < r.host_sync_ms
                && r.host_sync_ms >= r.device_ms * 0.9;
            (
                ok,
                format!(
                    "no sync {:.2} ms < sync {:.2} ms ≥ device {:.2} ms; kernels in order: {ordered}",
                    r.host_no_sync_ms, r.host_sync_ms, r.device_ms
                ),
            )
        };
        let mut checks = vec![checked(
            "timing: CPU stream shows the trap",
            run_cpu(),
            judge,
        )];
        match gpu {
            Some(gpu) => checks.push(checked(
                "timing: GPU events show the trap",
                run_gpu(gpu),
                judge,
            )),
            None => checks.push(no_gpu("timing: GPU events show the trap")),
        }
        checks
    }
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

//! Plain-text tables for `gpulab bench …` and `gpulab memory`: the same results the JSON
//! API returns, run directly on this machine's GPU (or its CPU when there is none) and
//! printed for a terminal. Each function opens the device itself, so a table never
//! competes with a running server's queue unless both run at once on one GPU.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::gpu::breakit::{self, BreakItParams};
use crate::gpu::cuda::CudaHandle;
use crate::gpu::memory::{Snapshot, snapshot};
use crate::gpu::pool::Source;
use crate::gpu::precision::{self, PrecisionParams};
use crate::gpu::stats::Summary;
use crate::gpu::train::{self, TrainParams};
use crate::gpu::train_cuda;
use crate::gpu::{card, matmul, timing, transfer};

/// Generous time limit for a command-line run.
const DEADLINE: Duration = Duration::from_secs(900);

/// The GPU, or `None` after telling the reader on stderr what runs instead.
fn open(instead: &str) -> Option<CudaHandle> {
    CudaHandle::open()
        .map_err(|reason| eprintln!("No GPU ({reason}): {instead}."))
        .ok()
}

fn gib(bytes: Option<u64>) -> String {
    bytes.map_or("—".into(), |b| {
        format!("{:.2} GiB", b as f64 / f64::from(1u32 << 30))
    })
}

/// Host↔device bandwidth, 1 KiB up to `max_bytes` (memcpy bandwidth without a GPU).
pub fn transfer(max_bytes: u64) -> Result<String, String> {
    let params = transfer::TransferParams { max_bytes };
    let deadline = Instant::now() + DEADLINE;
    let (result, device) = match open("measuring CPU memcpy bandwidth instead") {
        Some(gpu) => (
            transfer::run_cuda(&gpu, &params, deadline)?,
            gpu.card.name.clone(),
        ),
        None => (
            transfer::run_cpu(&params, deadline)?,
            card::cpu_info().model,
        ),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Transfer bandwidth on {device} (GB/s = 1e9 B/s; median [min, max] of {} samples)",
        transfer::SAMPLES
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
    Ok(out)
}

/// Square FP32 matmuls from 16 to `max_size` on the CPU and the GPU, with the crossover.
pub fn matmul(max_size: usize) -> Result<String, String> {
    let mut gpu = open("timing the CPU only");
    let r = matmul::run(
        gpu.as_mut(),
        &matmul::MatmulParams { max_size },
        Instant::now() + DEADLINE,
    )?;
    let ms = |s: Option<Summary>| s.map_or("—".to_string(), |s| format!("{:.3}", s.median));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Square FP32 matmul, median ms per product ({} repetitions)",
        matmul::REPS
    );
    let _ = writeln!(
        out,
        "{:>6}  {:>12}  {:>12}  {:>16}",
        "n", "CPU ms", "GPU ms", "GPU+copy ms"
    );
    for row in &r.rows {
        let _ = writeln!(
            out,
            "{:>6}  {:>12}  {:>12}  {:>16}",
            row.size,
            ms(row.cpu_ms),
            ms(row.gpu_ms),
            ms(row.gpu_with_copy_ms)
        );
    }
    let _ = writeln!(
        out,
        "GPU wins from n = {:?} (data on the GPU), {:?} (copy included)",
        r.crossover_size, r.crossover_with_copy_size
    );
    Ok(out)
}

/// The timing trap: host timer without sync, with sync, and device timestamps.
pub fn timing() -> Result<String, String> {
    let r = match open("a worker thread plays the GPU's stream") {
        Some(mut gpu) => timing::run_cuda(&mut gpu)?,
        None => timing::run_cpu()?,
    };
    let mut out = String::new();
    let _ = writeln!(out, "host timer, no sync : {:>8.2} ms", r.host_no_sync_ms);
    let _ = writeln!(out, "host timer, sync    : {:>8.2} ms", r.host_sync_ms);
    let _ = writeln!(out, "device timestamps   : {:>8.2} ms", r.device_ms);
    let _ = writeln!(
        out,
        "the unsynchronised timer is {:.1}x too low",
        r.underestimate_factor
    );
    Ok(out)
}

/// The precision shoot-out at `size`.
pub fn precision(size: usize) -> Result<String, String> {
    let params = PrecisionParams { size };
    params.validate(usize::MAX)?;
    let deadline = Instant::now() + DEADLINE;
    let mut gpu = open("running the shoot-out on the CPU");
    let result = precision::run(gpu.as_mut(), &params, deadline)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{size} × {size} GEMM per format against an FP64 reference (median of {} runs)",
        precision::REPS
    );
    let _ = writeln!(
        out,
        "{:<5}  {:>10}  {:>9}  {:>9}  {:>13}  {:>13}  note",
        "fmt", "ms", "TFLOP/s", "peak", "max |error|", "max rel error"
    );
    for row in &result.rows {
        let peak = row.peak_tflops.map_or("—".into(), |p| format!("{p:.1}"));
        let note = if row.emulated {
            "emulated on the CPU"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{:<5}  {:>10.3}  {:>9.3}  {:>9}  {:>13.3e}  {:>13.3e}  {note}",
            row.precision, row.ms.median, row.tflops, peak, row.max_abs_error, row.max_rel_error
        );
    }
    let _ = writeln!(out, "{}", result.peak_note);
    Ok(out)
}

/// A training run with `params`.
pub fn training(params: &TrainParams) -> Result<String, String> {
    params.validate(usize::MAX, usize::MAX)?;
    let mut gpu = open("training on the CPU");
    let r = train_cuda::run(gpu.as_mut(), params, Instant::now() + DEADLINE)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "MLP {}→{}→{}, batch {}, {} steps, {}, {}",
        train::FEATURES,
        params.hidden,
        train::CLASSES,
        params.batch,
        params.steps,
        params.optimizer,
        params.precision
    );
    let _ = writeln!(out, "{:>6}  {:>8}", "step", "loss");
    for point in &r.loss_curve {
        let _ = writeln!(out, "{:>6}  {:>8.4}", point.step, point.loss);
    }
    let _ = writeln!(
        out,
        "step time      : {:.3} ms median [{:.3}, {:.3}]",
        r.step_ms.median, r.step_ms.min, r.step_ms.max
    );
    let _ = writeln!(out, "throughput     : {:.0} samples/s", r.samples_per_sec);
    let _ = writeln!(out, "accuracy       : {:.1}%", r.accuracy * 100.0);
    let _ = writeln!(
        out,
        "loss read every step: {:.3} ms/step; every {}: {:.3} ms/step",
        r.read_every_step_ms, params.log_every, r.read_every_n_ms
    );
    Ok(out)
}

/// One of lesson 9's break-it cases.
pub fn break_it(case: &str) -> Result<String, String> {
    let params = BreakItParams {
        case: case.to_string(),
    };
    params.validate()?;
    let mut gpu = open("running it on the CPU");
    let mut out = String::new();
    if case == "batch-on-host" {
        let r = breakit::run_placement(gpu.as_mut())?;
        let _ = writeln!(out, "model on {}", r.model_device);
        let _ = writeln!(
            out,
            "{:<12}  {:<8}  {:<10}  {:>8}",
            "field", "device", "shape", "bytes"
        );
        for f in &r.fields {
            let _ = writeln!(
                out,
                "{:<12}  {:<8}  {:<10}  {:>8}",
                f.name,
                f.device,
                format!("{:?}", f.shape),
                f.bytes
            );
        }
        let _ = writeln!(
            out,
            "preflight: {}",
            r.preflight_error.as_deref().unwrap_or("passed")
        );
        let _ = writeln!(out, "fix: {}\n{}", r.fix, r.note);
    } else {
        let deadline = Instant::now() + DEADLINE;
        let r = breakit::run_logging(|p| train_cuda::run(gpu.as_mut(), p, deadline), deadline)?;
        let _ = writeln!(
            out,
            "{:>10}  {:>10}  {:>12}  {:>10}",
            "log every", "ms/step", "samples/s", "loss reads"
        );
        for run in &r.runs {
            let _ = writeln!(
                out,
                "{:>10}  {:>10.3}  {:>12.0}  {:>10}",
                run.log_every, run.step_ms.median, run.samples_per_sec, run.loss_reads
            );
        }
        let _ = writeln!(
            out,
            "reading the loss every step makes the median step {:.2}× as long as reading it every {}",
            r.slowdown,
            breakit::SPARSE_EVERY
        );
    }
    Ok(out)
}

/// The memory snapshot: NVML and the driver on a GPU, host memory on the CPU.
pub fn memory() -> String {
    let gpu = CudaHandle::open().ok();
    let source = match &gpu {
        Some(handle) => Source::Device(std::sync::Arc::clone(&handle.ctx)),
        None => Source::Host,
    };
    let s: Snapshot = snapshot(&source);
    let mut out = String::new();
    let _ = writeln!(out, "backend            : {}", s.backend);
    let _ = writeln!(
        out,
        "NVML used / total  : {} / {}",
        gib(s.nvml_used_bytes),
        gib(s.nvml_total_bytes)
    );
    let _ = writeln!(
        out,
        "driver free / total: {} / {}",
        gib(s.driver_free_bytes),
        gib(s.driver_total_bytes)
    );
    let _ = writeln!(
        out,
        "host available / total: {} / {}",
        gib(s.host_available_bytes),
        gib(s.host_total_bytes)
    );
    let _ = writeln!(
        out,
        "this process (resident): {}",
        gib(s.process_resident_bytes)
    );
    for p in &s.processes {
        let _ = writeln!(out, "GPU process {:>8}: {}", p.pid, gib(p.used_bytes));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_print_measured_rows_on_this_machine() {
        let text = precision(64).unwrap();
        for name in ["fp32", "tf32", "fp16", "bf16"] {
            assert!(text.contains(name), "{text}");
        }
        let text = break_it("batch-on-host").unwrap();
        assert!(text.contains("features") && text.contains("preflight"));
        assert!(break_it("nonsense").unwrap_err().contains("case must be"));
        assert!(memory().contains("backend"));
    }
}

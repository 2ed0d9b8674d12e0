//! This device's own ceilings: what its links, memory and arithmetic delivered when the
//! server started, so a result can say where it sits ("this copy ran at 92% of what
//! this link delivered today"). A datasheet peak is what the hardware could do in
//! principle; a ceiling measured here, on this box, today, is what an experiment can
//! hope to reach, and a point near it is a different lesson from a point far below.
//!
//! [`calibrate`] runs once per server start on the engine's first worker, and once per
//! `gpulab worker` process (which stores them for the web nodes), before either serves
//! a job: on a GPU, large copies each way from pinned and pageable memory, a
//! device-to-device copy and a large GEMM per format; on the CPU, `memcpy` between two
//! host buffers and SGEMM. Each is a median over a few timed repetitions after a
//! warm-up, timed like the experiments (CUDA events on the GPU, the host clock on the
//! CPU). The datasheet figure beside each comes from what GPU Lab already knows: the
//! PCIe link's theoretical peak and the per-format peaks the precision experiment uses.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::ExperimentError;
use super::precision::{self, Format};
use crate::cpu;
use crate::gpu::Gpu;
use crate::measure::{Deadline, HostClock, Reps, Summary, repeat};

/// Warm-up and timed repetitions of each figure.
pub const REPS: Reps = Reps {
    warmups: 1,
    timed: 5,
};
/// The whole calibration stops after this long (a figure not reached is left out).
pub const BUDGET: Duration = Duration::from_secs(20);
/// Bytes per copy on the GPU: large enough for a link to reach its plateau.
pub const GPU_COPY_BYTES: usize = 256 << 20;
/// Bytes per `memcpy` on the CPU.
pub const CPU_COPY_BYTES: usize = 64 << 20;
/// GEMM side on the GPU.
pub const GPU_GEMM_N: usize = 4096;
/// SGEMM side on the CPU.
pub const CPU_GEMM_N: usize = 512;

/// One measured ceiling.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Ceiling {
    /// Stable name a panel looks up: `h2d_pinned`, `d2h_pageable`, `d2d`,
    /// `gemm_fp32`, `gemm_bf16`, `memcpy`, `sgemm` …
    pub key: String,
    /// What was measured, in words.
    pub label: String,
    /// `GB/s` or `TFLOP/s`.
    pub unit: String,
    /// The median over the timed repetitions.
    pub value: f64,
    /// The slowest and fastest repetitions, in `unit`.
    pub low: f64,
    /// See `low`.
    pub high: f64,
    /// The datasheet's (or the link's theoretical) peak in `unit`, when known.
    pub datasheet: Option<f64>,
    /// Where `datasheet` comes from.
    pub datasheet_from: Option<String>,
    /// How it was measured.
    pub how: String,
}

/// Every ceiling of this device, measured at start-up.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Ceilings {
    /// `gpu` or `cpu`.
    pub backend: String,
    /// How long the calibration took, ms.
    pub took_ms: f64,
    /// The figures, in the order shown.
    pub figures: Vec<Ceiling>,
    /// Figures that could not be measured, and why.
    pub missing: Vec<String>,
}

impl Ceilings {
    /// The figure named `key`.
    pub fn get(&self, key: &str) -> Option<&Ceiling> {
        self.figures.iter().find(|c| c.key == key)
    }

    /// Sets the device-memory figure's datasheet peak (`value` GB/s, from `from`).
    pub fn with_memory_datasheet(mut self, value: f64, from: String) -> Self {
        if let Some(c) = self.figures.iter_mut().find(|c| c.key == "d2d") {
            c.datasheet = Some(value);
            c.datasheet_from = Some(from);
        }
        self
    }
}

/// A rate from a summary of milliseconds: `amount` per median second, with the range.
fn rate(
    key: &'static str,
    label: &str,
    unit: &'static str,
    amount: f64,
    ms: Summary,
    datasheet: Option<f64>,
    how: String,
) -> Ceiling {
    let per = |ms: f64| amount / (ms / 1e3);
    Ceiling {
        key: key.to_string(),
        label: label.to_string(),
        unit: unit.to_string(),
        value: per(ms.median),
        low: per(ms.max),
        high: per(ms.min),
        datasheet_from: datasheet.map(|_| match unit {
            "TFLOP/s" => {
                "datasheet peak at the datasheet clock (as in the precision experiment)".to_string()
            }
            _ => "this PCIe link's theoretical peak per direction".to_string(),
        }),
        datasheet,
        how: format!(
            "{how}; median of {} after {} warm-up",
            ms.samples, REPS.warmups
        ),
    }
}

/// Measures this device's ceilings: the GPU's when there is one, else the CPU's.
pub fn calibrate(gpu: Option<&mut Gpu>) -> Ceilings {
    let started = Instant::now();
    let deadline = Deadline::after(BUDGET);
    let (backend, mut figures, mut missing) = (
        if gpu.is_some() { "gpu" } else { "cpu" },
        Vec::new(),
        Vec::new(),
    );
    let mut keep = |what: &str, got: Result<Ceiling, ExperimentError>| match got {
        Ok(c) => figures.push(c),
        Err(e) => missing.push(format!("{what}: {e}")),
    };
    match gpu {
        Some(gpu) => {
            for (key, label, h2d, pinned) in [
                ("h2d_pinned", "Host→device copy, pinned", true, true),
                ("d2h_pinned", "Device→host copy, pinned", false, true),
                ("h2d_pageable", "Host→device copy, pageable", true, false),
                ("d2h_pageable", "Device→host copy, pageable", false, false),
            ] {
                keep(label, gpu_copy(gpu, key, label, (h2d, pinned), &deadline));
            }
            keep("device copy", gpu_d2d(gpu, &deadline));
            for format in Format::ALL {
                keep(format.name(), gpu_gemm(gpu, format, &deadline));
            }
        }
        None => {
            keep("memcpy", cpu_memcpy(&deadline));
            keep("SGEMM", cpu_sgemm(&deadline));
        }
    }
    Ceilings {
        backend: backend.to_string(),
        took_ms: started.elapsed().as_secs_f64() * 1e3,
        figures,
        missing,
    }
}

fn cpu_memcpy(deadline: &Deadline) -> Result<Ceiling, ExperimentError> {
    let src = vec![1u8; CPU_COPY_BYTES];
    let mut dst = vec![0u8; CPU_COPY_BYTES];
    let ms = repeat::<_, ExperimentError>(&mut HostClock::default(), REPS, deadline, || {
        dst.copy_from_slice(std::hint::black_box(&src));
        std::hint::black_box(&mut dst);
        Ok(())
    })?;
    let how = format!(
        "one {} MiB copy between two host buffers, host clock",
        CPU_COPY_BYTES >> 20
    );
    Ok(rate(
        "memcpy",
        "memcpy, host to host",
        "GB/s",
        CPU_COPY_BYTES as f64 / 1e9,
        ms,
        None,
        how,
    ))
}

fn cpu_sgemm(deadline: &Deadline) -> Result<Ceiling, ExperimentError> {
    let n = CPU_GEMM_N;
    let (a, b) = (cpu::random_matrix(n * n, 1), cpu::random_matrix(n * n, 2));
    let mut c = vec![0.0f32; n * n];
    let ms = repeat::<_, ExperimentError>(&mut HostClock::default(), REPS, deadline, || {
        cpu::sgemm(n, &a, &b, &mut c);
        std::hint::black_box(&c);
        Ok(())
    })?;
    let flop = 2.0 * (n as f64).powi(3);
    let how = format!("{n} × {n} SGEMM on every core, host clock");
    Ok(rate(
        "sgemm",
        "SGEMM (FP32)",
        "TFLOP/s",
        flop / 1e12,
        ms,
        None,
        how,
    ))
}

fn gpu_copy(
    gpu: &mut Gpu,
    key: &'static str,
    label: &str,
    (h2d, pinned): (bool, bool),
    deadline: &Deadline,
) -> Result<Ceiling, ExperimentError> {
    let n = GPU_COPY_BYTES;
    let stream = gpu.stream().clone();
    let mut device = stream.zeros::<u8>(n)?;
    let mut pinned_buffer = if pinned {
        Some(gpu.pinned::<u8>(n)?)
    } else {
        None
    };
    let mut pageable = if pinned { Vec::new() } else { vec![1u8; n] };
    let host: &mut [u8] = match pinned_buffer.as_mut() {
        Some(buffer) => buffer.as_mut_slice()?,
        None => &mut pageable,
    };
    let mut clock = gpu.event_clock()?;
    let ms = repeat::<_, ExperimentError>(&mut clock, REPS, deadline, || {
        if h2d {
            stream.copy_to_device(host, &mut device)?;
        } else {
            stream.copy_to_host(&device, host)?;
        }
        Ok(())
    })?;
    let peak = gpu.card().pcie.as_ref().map(|p| p.peak_gbps);
    let how = format!("one {} MiB copy, CUDA events", n >> 20);
    Ok(rate(key, label, "GB/s", n as f64 / 1e9, ms, peak, how))
}

pub(crate) fn gpu_d2d(gpu: &mut Gpu, deadline: &Deadline) -> Result<Ceiling, ExperimentError> {
    let n = GPU_COPY_BYTES;
    let stream = gpu.stream().clone();
    let src = stream.zeros::<u8>(n)?;
    let mut dst = stream.zeros::<u8>(n)?;
    let mut clock = gpu.event_clock()?;
    let ms = repeat::<_, ExperimentError>(&mut clock, REPS, deadline, || {
        Ok(stream.copy_on_device(&src, &mut dst)?)
    })?;
    // Each byte is read once and written once: 2 × size crosses the memory bus.
    let how = format!(
        "one {} MiB device-to-device copy counted as 2 × its size (read + write), CUDA events",
        n >> 20
    );
    Ok(rate(
        "d2d",
        "Device memory (device-to-device copy)",
        "GB/s",
        2.0 * n as f64 / 1e9,
        ms,
        None,
        how,
    ))
}

pub(crate) fn gpu_gemm(
    gpu: &mut Gpu,
    format: Format,
    deadline: &Deadline,
) -> Result<Ceiling, ExperimentError> {
    let n = GPU_GEMM_N;
    let (a, b) = precision::inputs(n);
    let (ms, _, _) = precision::run_format(gpu, format, n, (&a, &b), (deadline, Instant::now()))?;
    let peak = precision::peak_tflops(gpu.card(), format);
    let key = match format {
        Format::Fp32 => "gemm_fp32",
        Format::Tf32 => "gemm_tf32",
        Format::Fp16 => "gemm_fp16",
        Format::Bf16 => "gemm_bf16",
    };
    let label = format!("GEMM, {}", format.name().to_uppercase());
    let how = format!("{n} × {n} cuBLAS gemm_ex as in the precision experiment, CUDA events");
    Ok(rate(
        key,
        &label,
        "TFLOP/s",
        2.0 * (n as f64).powi(3) / 1e12,
        ms,
        peak,
        how,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_calibration_measures_memcpy_and_sgemm_with_their_spread() {
        let c = calibrate(None);
        assert_eq!(c.backend, "cpu");
        assert!(c.missing.is_empty(), "{:?}", c.missing);
        let memcpy = c.get("memcpy").unwrap();
        let sgemm = c.get("sgemm").unwrap();
        for f in [memcpy, sgemm] {
            assert!(
                f.value > 0.0 && f.low <= f.value && f.value <= f.high,
                "{f:?}"
            );
            assert!(f.datasheet.is_none(), "no datasheet for a CPU");
        }
        assert_eq!((&*memcpy.unit, &*sgemm.unit), ("GB/s", "TFLOP/s"));
        assert!(c.get("h2d_pinned").is_none());
    }

    #[test]
    fn ceilings_read_back_from_the_json_a_worker_stores() {
        let ms = crate::measure::summarize(&[2.0, 4.0, 5.0]).unwrap();
        let stored = Ceilings {
            backend: "gpu".into(),
            took_ms: 12.5,
            figures: vec![rate(
                "d2d",
                "Device memory",
                "GB/s",
                8.0,
                ms,
                None,
                "t".into(),
            )],
            missing: vec!["GEMM, BF16: not supported".into()],
        };
        let text = serde_json::to_string(&stored).unwrap();
        let read: Ceilings = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
        assert_eq!(read.get("d2d").unwrap().value, 2000.0);
    }

    #[test]
    fn a_rate_is_the_amount_per_median_second_and_the_slowest_run_is_the_low_end() {
        let ms = crate::measure::summarize(&[2.0, 4.0, 5.0]).unwrap();
        let c = rate("x", "x", "GB/s", 8.0, ms, Some(10.0), "test".into());
        assert_eq!((c.value, c.low, c.high), (2000.0, 1600.0, 4000.0));
        assert!(c.how.contains("median of 3"));
    }
}

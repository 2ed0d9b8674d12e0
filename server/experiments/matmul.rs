//! Experiment: the CPU/GPU matmul crossover (lesson 1). Square FP32 matrix products from
//! 16 × 16 up to the cap, timed on the CPU (multithreaded SGEMM) and, when there is one,
//! on the GPU (cuBLAS through `gpu::blas`, CUDA events), with and without copying the
//! inputs in first. The crossover is the first size from which the GPU stays faster.
//! The result's trace draws every timed product from the same clock readings the
//! medians come from: the CPU's SGEMMs on one track, the GPU stream's on another.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked, max_rel_diff, no_gpu};
use super::trace::{Trace, TraceBuilder, Track};
use super::{Experiment, ExperimentError, Rule};
use crate::config::Limits;
use crate::cpu;
use crate::gpu::{Blas, Compute, DeviceBuffer, Gpu, Operand, Output};
use crate::measure::calibrate::{WARMUP_MS, warm_up};
use crate::measure::recorded::Recorded;
use crate::measure::{Clock, Deadline, HostClock, Reps, Summary, repeat};

/// Sizes tried, smallest first.
pub const SIZES: &[usize] = &[16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
/// One warm-up, then timed repetitions per size.
pub const REPS: Reps = Reps {
    warmups: 1,
    timed: 5,
};
/// A CPU size whose warm-up product takes longer than this ends the CPU sweep.
pub const CPU_SLOW: Duration = Duration::from_secs(3);
/// Smallest matrix side accepted.
pub const MIN_SIZE: usize = 16;

/// GPU products timed back to back as one sample at side `n`: 2³⁴ / n³, from 1 (n ≥ 2048)
/// to 64, so the GPU's queue stays full and a sample measures the product, not the
/// launch call in front of it (n = 1024: 16 products). The PyTorch reference
/// (tests/gpu/ref_matmul.py) reads this count from the row and times the same way.
pub fn products_per_sample(n: usize) -> usize {
    let cube = (n.max(1) as u64).pow(3);
    ((1u64 << 34) / cube).clamp(1, 64) as usize
}

/// What the student asks for.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MatmulParams {
    /// Largest matrix side (capped by the server).
    pub max_size: usize,
}

impl Default for MatmulParams {
    fn default() -> Self {
        Self { max_size: 4096 }
    }
}

/// One size.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct MatmulRow {
    /// Matrix side n (n × n times n × n).
    pub size: usize,
    /// FLOP per product: 2n³.
    pub flop: f64,
    /// CPU milliseconds per product; `None` when skipped as too slow.
    pub cpu_ms: Option<Summary>,
    /// GPU milliseconds per product, data already on the GPU: each sample is `products`
    /// back-to-back products between two events, divided by `products`.
    pub gpu_ms: Option<Summary>,
    /// Back-to-back GPU products per timed sample ([`products_per_sample`]); 0 on the CPU.
    pub products: usize,
    /// GPU milliseconds including copying both inputs from host memory first.
    pub gpu_with_copy_ms: Option<Summary>,
}

/// The sweep.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct MatmulResult {
    /// One row per size.
    pub rows: Vec<MatmulRow>,
    /// First size from which the GPU (data resident) beats the CPU at every larger size.
    pub crossover_size: Option<usize>,
    /// The same, counting the copy in.
    pub crossover_with_copy_size: Option<usize>,
    /// Largest |GPU − CPU| element difference at 256 × 256, when both ran.
    pub max_abs_diff_vs_cpu: Option<f64>,
    /// Every timed product on its track (CPU; GPU stream), as a Chrome trace.
    pub trace: Trace,
}

/// The trace being written and the clock origin its spans are placed against.
struct Timeline {
    trace: TraceBuilder,
    origin: Instant,
    cpu: Track,
    gpu: Option<Track>,
}

impl Timeline {
    fn new(on_gpu: bool) -> Self {
        let clock = if on_gpu {
            "CPU products: host clock; GPU products: CUDA events around each, placed at the host time the start event was recorded"
        } else {
            "the host's monotonic clock (Instant)"
        };
        let mut trace = TraceBuilder::new("matmul crossover", on_gpu, clock);
        let cpu = trace.track("CPU: SGEMM (every core above the threading cutoff)");
        let gpu = on_gpu.then(|| trace.track("GPU stream: cuBLAS SGEMM"));
        Self {
            trace,
            origin: Instant::now(),
            cpu,
            gpu,
        }
    }
}

fn sizes(max: usize) -> Vec<usize> {
    SIZES.iter().copied().filter(|s| *s <= max).collect()
}

/// CPU milliseconds per n × n product, or `None` when one product is too slow.
fn time_cpu(
    n: usize,
    deadline: &Deadline,
    timeline: &mut Timeline,
) -> Result<Option<Summary>, ExperimentError> {
    let a = cpu::random_matrix(n * n, 1);
    let b = cpu::random_matrix(n * n, 2);
    let mut c = vec![0.0f32; n * n];
    let warm = Instant::now();
    cpu::sgemm(n, &a, &b, &mut c);
    if warm.elapsed() > CPU_SLOW {
        return Ok(None);
    }
    let reps = Reps { warmups: 0, ..REPS };
    let mut host = HostClock::default();
    let mut clock = Recorded::new(&mut host, timeline.origin);
    let ms = repeat::<_, ExperimentError>(&mut clock, reps, deadline, || {
        cpu::sgemm(n, &a, &b, &mut c);
        std::hint::black_box(&c);
        Ok(())
    })?;
    let track = timeline.cpu;
    timeline
        .trace
        .samples(track, &format!("SGEMM {n}×{n}"), "work", &clock.take());
    Ok(Some(ms))
}

/// First size from which the GPU's time (`gpu`) beats the CPU at this and every larger size.
fn crossover(rows: &[MatmulRow], gpu: impl Fn(&MatmulRow) -> Option<f64>) -> Option<usize> {
    let mut answer = None;
    for row in rows.iter().rev() {
        match (gpu(row), row.cpu_ms) {
            (Some(g), Some(c)) if g < c.median => answer = Some(row.size),
            (Some(_), Some(_)) => break,
            _ => {}
        }
    }
    answer
}

fn sweep(
    mut gpu: Option<&mut Gpu>,
    params: &MatmulParams,
    deadline: &Deadline,
) -> Result<MatmulResult, ExperimentError> {
    let mut rows = Vec::new();
    let mut timeline = Timeline::new(gpu.is_some());
    let mut cpu_too_slow = false;
    for n in sizes(params.max_size) {
        deadline.check()?;
        let cpu_ms = if cpu_too_slow {
            None
        } else {
            time_cpu(n, deadline, &mut timeline)?
        };
        cpu_too_slow |= cpu_ms.is_none();
        let products = if gpu.is_some() {
            products_per_sample(n)
        } else {
            0
        };
        let (gpu_ms, gpu_with_copy_ms) = match gpu.as_deref_mut() {
            Some(gpu) => {
                let (resident, with_copy) = time_gpu(gpu, n, deadline, &mut timeline)?;
                (Some(resident), Some(with_copy))
            }
            None => (None, None),
        };
        rows.push(MatmulRow {
            size: n,
            flop: 2.0 * (n as f64).powi(3),
            cpu_ms,
            gpu_ms,
            products,
            gpu_with_copy_ms,
        });
    }
    let max_abs_diff_vs_cpu = match gpu {
        Some(gpu) if params.max_size >= 256 => {
            let (gpu_c, cpu_c) = products(gpu, 256)?;
            Some(
                gpu_c
                    .iter()
                    .zip(&cpu_c)
                    .map(|(g, c)| f64::from((g - c).abs()))
                    .fold(0.0, f64::max),
            )
        }
        _ => None,
    };
    Ok(MatmulResult {
        crossover_size: crossover(&rows, |r| r.gpu_ms.map(|s| s.median)),
        crossover_with_copy_size: crossover(&rows, |r| r.gpu_with_copy_ms.map(|s| s.median)),
        rows,
        max_abs_diff_vs_cpu,
        trace: timeline.trace.finish(),
    })
}

fn sgemm(
    blas: &Blas,
    n: usize,
    a: &DeviceBuffer<f32>,
    b: &DeviceBuffer<f32>,
    c: &mut DeviceBuffer<f32>,
) -> Result<(), ExperimentError> {
    blas.gemm(
        Operand::new(a, n, n),
        Operand::new(b, n, n),
        Output::new(c, n, n),
        Compute::F32,
    )?;
    Ok(())
}

/// GPU milliseconds per product with the inputs resident, and with both inputs copied
/// from host memory first.
fn time_gpu(
    gpu: &mut Gpu,
    n: usize,
    deadline: &Deadline,
    timeline: &mut Timeline,
) -> Result<(Summary, Summary), ExperimentError> {
    let stream = gpu.stream().clone();
    let host_a = cpu::random_matrix(n * n, 1);
    let host_b = cpu::random_matrix(n * n, 2);
    let mut a = stream.upload(&host_a)?;
    let mut b = stream.upload(&host_b)?;
    let mut c = stream.zeros::<f32>(n * n)?;
    let blas = gpu.blas();
    let mut clock = gpu.event_clock()?;
    // The CPU's turn at this size let the GPU idle and drop its clock: keep it busy
    // with this product for a while before timing it.
    warm_up::<ExperimentError>(WARMUP_MS, WARMUP_MS / 8.0, 1, 1 << 20, |products| {
        deadline.check()?;
        clock.start()?;
        for _ in 0..products {
            sgemm(&blas, n, &a, &b, &mut c)?;
        }
        Ok(clock.stop()?)
    })?;
    let mut clock = Recorded::new(&mut clock, timeline.origin);
    let products = products_per_sample(n);
    let resident = repeat(&mut clock, REPS, deadline, || {
        for _ in 0..products {
            sgemm(&blas, n, &a, &b, &mut c)?;
        }
        Ok::<(), ExperimentError>(())
    })?
    .per_run(products);
    let resident_runs = clock.take();
    let with_copy = repeat(&mut clock, REPS, deadline, || {
        stream.copy_to_device(&host_a, &mut a)?;
        stream.copy_to_device(&host_b, &mut b)?;
        sgemm(&blas, n, &a, &b, &mut c)
    })?;
    if let Some(track) = timeline.gpu {
        let name = format!("SGEMM {n}×{n} × {products}");
        timeline
            .trace
            .samples(track, &name, "kernel", &resident_runs);
        let name = format!("copy A, B in + SGEMM {n}×{n}");
        timeline.trace.samples(track, &name, "copy", &clock.take());
    }
    Ok((resident, with_copy))
}

/// The same n × n product on the GPU and the CPU.
fn products(gpu: &mut Gpu, n: usize) -> Result<(Vec<f32>, Vec<f32>), ExperimentError> {
    let stream = gpu.stream().clone();
    let host_a = cpu::random_matrix(n * n, 3);
    let host_b = cpu::random_matrix(n * n, 4);
    let mut cpu_c = vec![0.0f32; n * n];
    cpu::sgemm(n, &host_a, &host_b, &mut cpu_c);
    let (a, b) = (stream.upload(&host_a)?, stream.upload(&host_b)?);
    let mut c = stream.zeros::<f32>(n * n)?;
    let blas = gpu.blas();
    sgemm(&blas, n, &a, &b, &mut c)?;
    Ok((stream.download(&c)?, cpu_c))
}

/// The experiment.
pub struct Matmul;

impl Experiment for Matmul {
    const NAME: &'static str = "matmul";
    const DIRECTIVE: &'static str = "matmul-crossover";
    const LESSON: &'static str = "why-gpus";
    const TITLE: &'static str = "CPU against GPU matmul crossover";
    const SUMMARY: &'static str =
        "Square FP32 matmuls from 16 to max_size on the CPU and the GPU, with the crossover size";
    type Params = MatmulParams;
    type Output = MatmulResult;

    const PREDICT: &'static [Quantity] = &[
        Quantity {
            key: "matmul.crossover_size",
            unit: "n",
            scale: Scale::Exact,
            on: On::Gpu,
            when: None,
        },
        Quantity {
            key: "matmul.cpu_gflops",
            unit: "GFLOP/s",
            scale: Scale::Ratio,
            on: On::Cpu,
            when: None,
        },
    ];

    fn measure(key: &str, _: &MatmulParams, r: &MatmulResult) -> Option<f64> {
        match key {
            // 0 stands for "never": the GPU did not win within the sweep.
            "matmul.crossover_size" => Some(r.crossover_size.map_or(0.0, |n| n as f64)),
            "matmul.cpu_gflops" => {
                let row = r.rows.iter().rev().find(|row| row.cpu_ms.is_some())?;
                Some(row.flop / (row.cpu_ms?.median * 1e-3) / 1e9)
            }
            _ => None,
        }
    }

    fn rules(limits: &Limits) -> Vec<Rule> {
        vec![Rule::Range {
            field: "max_size",
            min: MIN_SIZE as u64,
            max: limits.max_matmul_size as u64,
            cap: true,
        }]
    }

    fn method(_: &MatmulParams) -> String {
        format!(
            "square FP32 products; CPU: SGEMM ({}; one thread below n = {}, C's rows split across every core from there, a threshold measured on this machine), host clock; GPU: cuBLAS gemm_ex (FP32) timed with CUDA events after ≥ {} ms of the same products to bring the GPU back to its working clock after the CPU's turn; with the inputs resident, each sample is several back-to-back products between two events (64 at n = 16 down to 1 from n = 2048) divided by their count, so the time is the product's, not the launch call's; with both inputs copied from pageable host memory first, one copy-and-product per sample; {} warm-up, median of {} repetitions",
            cpu::kernel(),
            cpu::threading()
                .from_size
                .map_or_else(|| "∞ (one core)".to_string(), |n| n.to_string()),
            WARMUP_MS,
            REPS.warmups,
            REPS.timed
        )
    }

    fn run_gpu(
        gpu: &mut Gpu,
        params: &MatmulParams,
        deadline: &Deadline,
    ) -> Result<MatmulResult, ExperimentError> {
        sweep(Some(gpu), params, deadline)
    }

    fn run_cpu(
        params: &MatmulParams,
        deadline: &Deadline,
    ) -> Result<MatmulResult, ExperimentError> {
        sweep(None, params, deadline)
    }

    fn table(_: &MatmulParams, r: &MatmulResult) -> String {
        let ms = |s: Option<Summary>| s.map_or("—".to_string(), |s| format!("{:.3}", s.median));
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Square FP32 matmul, median ms per product ({} repetitions)",
            REPS.timed
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
        out
    }

    fn describe(params: &MatmulParams) -> String {
        format!(
            "Times square matrix multiplications from 16 × 16 up to {0} × {0} on this server's CPU and GPU and marks the size where the GPU starts winning. Small sizes lose to launch and copy overhead.",
            crate::format::thousands(params.max_size as f64)
        )
    }

    fn selftest(gpu: Option<&mut Gpu>) -> Vec<Check> {
        let n = 96;
        let (a, b) = (cpu::random_matrix(n * n, 5), cpu::random_matrix(n * n, 6));
        let mut c = vec![0.0f32; n * n];
        cpu::sgemm(n, &a, &b, &mut c);
        let mut reference = vec![0.0f64; n * n];
        cpu::dgemm(n, &cpu::to_f64(&a), &cpu::to_f64(&b), &mut reference);
        let diff = max_rel_diff(&cpu::to_f64(&c), &reference);
        let mut checks = vec![Check::expect(
            "matmul: CPU SGEMM vs FP64 reference (n = 96)",
            diff < 1e-5,
            format!("max relative difference {diff:.2e} (tolerance 1e-5)"),
        )];
        match gpu {
            Some(gpu) => checks.push(checked(
                "matmul: cuBLAS SGEMM vs CPU SGEMM (n = 256)",
                products(gpu, 256),
                |(g, c)| {
                    let d = max_rel_diff(&cpu::to_f64(g), &cpu::to_f64(c));
                    (
                        d < 1e-4,
                        format!("max relative difference {d:.2e} (tolerance 1e-4)"),
                    )
                },
            )),
            None => checks.push(no_gpu("matmul: cuBLAS SGEMM vs CPU SGEMM")),
        }
        checks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(size: usize, cpu: f64, gpu: f64) -> MatmulRow {
        let s = |m| {
            Some(Summary {
                median: m,
                min: m,
                max: m,
                samples: 1,
                q1: m,
                q3: m,
                outliers: 0,
                stable: true,
            })
        };
        MatmulRow {
            size,
            flop: 0.0,
            cpu_ms: s(cpu),
            gpu_ms: s(gpu),
            products: 1,
            gpu_with_copy_ms: None,
        }
    }

    #[test]
    fn small_products_are_timed_back_to_back_and_large_ones_alone() {
        let counts: Vec<usize> = SIZES.iter().map(|&n| products_per_sample(n)).collect();
        assert_eq!(counts, vec![64, 64, 64, 64, 64, 64, 16, 2, 1]);
        // Milliseconds per sample of 16 products become milliseconds per product.
        let per_sample = row(1024, 0.0, 1.04).gpu_ms.unwrap();
        let each = per_sample.per_run(16);
        assert!((each.median - 0.065).abs() < 1e-12 && each.samples == 1);
    }

    #[test]
    fn the_crossover_is_where_the_gpu_keeps_winning() {
        let rows = vec![
            row(16, 0.01, 0.02),
            row(32, 0.05, 0.03),
            row(64, 0.1, 0.2),
            row(128, 1.0, 0.3),
            row(256, 8.0, 0.5),
        ];
        assert_eq!(crossover(&rows, |r| r.gpu_ms.map(|s| s.median)), Some(128));
        assert_eq!(
            crossover(&rows, |r| r.gpu_with_copy_ms.map(|s| s.median)),
            None
        );
    }

    #[test]
    fn the_cpu_sweep_times_every_size_up_to_the_cap() {
        let result = Matmul::run_cpu(
            &MatmulParams { max_size: 128 },
            &Deadline::after(Duration::from_secs(60)),
        )
        .unwrap();
        assert_eq!(
            result.rows.iter().map(|r| r.size).collect::<Vec<_>>(),
            vec![16, 32, 64, 128]
        );
        for r in &result.rows {
            let ms = r.cpu_ms.unwrap();
            assert!(ms.median > 0.0 && r.gpu_ms.is_none() && r.products == 0);
        }
        let small = result.rows[0].cpu_ms.unwrap().median;
        let large = result.rows[3].cpu_ms.unwrap().median;
        assert!(
            large > small,
            "a 128 product ({large} ms) takes longer than a 16 one ({small} ms)"
        );
        assert_eq!(result.crossover_size, None);
        // The trace holds every timed product, on the CPU's track, from the same clock.
        let spans: Vec<_> = result
            .trace
            .trace_events
            .iter()
            .filter(|e| e.ph == "X")
            .collect();
        let counted: usize = spans.iter().map(|e| e.args.count.unwrap_or(1)).sum();
        let samples: usize = result.rows.iter().map(|r| r.cpu_ms.unwrap().samples).sum();
        assert_eq!(counted, samples);
        let first = spans.iter().find(|e| e.name == "SGEMM 128×128").unwrap();
        let row = result.rows[3].cpu_ms.unwrap();
        let ms = first.dur.unwrap() / 1e3;
        assert!(
            ms >= row.min - 1e-9 && ms <= row.max + 1e-9,
            "{ms} in {row:?}"
        );
    }
}

//! Experiment: the precision shoot-out (lesson 8). One square GEMM of the student's size
//! in FP32, TF32, FP16 and BF16, each timed and compared with an FP64 reference of the
//! same product: speed (TFLOP/s, next to the device's estimated peak) against accuracy
//! (largest error). On a GPU every format runs through cuBLAS `gemm_ex` with its own
//! compute type and the reference is cuBLAS DGEMM; on the CPU backend FP32 is a real
//! SGEMM and the other formats are emulated by rounding the inputs (and, for the 16-bit
//! formats, the output) to the format, which shows their error honestly but not their
//! speed — the result says so. The trace draws every timed product from the same clock
//! readings the medians come from.

use std::fmt::Write as _;
use std::time::Instant;

use half::{bf16, f16};
use serde::{Deserialize, Serialize};

use super::prediction::{On, Quantity, Scale};
use super::selftest::{Check, checked, no_gpu};
use super::trace::{Trace, TraceBuilder};
use super::{Experiment, ExperimentError, Rule};
use crate::config::Limits;
use crate::cpu;
use crate::gpu::blas::BlasScalar;
use crate::gpu::{Blas, Compute, DeviceBuffer, DeviceCard, Gpu, Operand, Output, Stream};
use crate::measure::recorded::{Interval, Recorded};
use crate::measure::{Deadline, HostClock, Reps, Summary, repeat};

/// One warm-up, then timed repetitions per format.
pub const REPS: Reps = Reps {
    warmups: 1,
    timed: 5,
};
/// Smallest matrix side accepted.
pub const MIN_SIZE: usize = 64;

/// What the student asks for.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PrecisionParams {
    /// Matrix side n: the product is n × n times n × n (capped by the server).
    pub size: usize,
}

impl Default for PrecisionParams {
    fn default() -> Self {
        Self { size: 4096 }
    }
}

/// The four formats, in the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// IEEE single precision, FP32 arithmetic.
    Fp32,
    /// FP32 storage, tensor-core multiplies with a 10-bit mantissa.
    Tf32,
    /// IEEE half precision inputs and output, FP32 accumulation.
    Fp16,
    /// bfloat16 inputs and output, FP32 accumulation.
    Bf16,
}

impl Format {
    /// All formats, in the order shown.
    pub const ALL: [Self; 4] = [Self::Fp32, Self::Tf32, Self::Fp16, Self::Bf16];

    /// Lower-case name used in the API.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fp32 => "fp32",
            Self::Tf32 => "tf32",
            Self::Fp16 => "fp16",
            Self::Bf16 => "bf16",
        }
    }

    /// The value `x` becomes when stored in (or, for TF32, multiplied in) this format.
    pub fn round(self, x: f32) -> f32 {
        match self {
            Self::Fp32 => x,
            Self::Tf32 => round_to_tf32(x),
            Self::Fp16 => half::f16::from_f32(x).to_f32(),
            Self::Bf16 => half::bf16::from_f32(x).to_f32(),
        }
    }

    fn gpu_compute(self) -> &'static str {
        match self {
            Self::Fp32 => "cuBLAS gemm_ex, FP32 in/out, CUBLAS_COMPUTE_32F",
            Self::Tf32 => "cuBLAS gemm_ex, FP32 in/out, CUBLAS_COMPUTE_32F_FAST_TF32",
            Self::Fp16 => "cuBLAS gemm_ex, FP16 in/out, CUBLAS_COMPUTE_32F (FP32 accumulate)",
            Self::Bf16 => "cuBLAS gemm_ex, BF16 in/out, CUBLAS_COMPUTE_32F (FP32 accumulate)",
        }
    }

    fn cpu_compute(self) -> &'static str {
        match self {
            Self::Fp32 => "FP32 SGEMM on the CPU",
            Self::Tf32 => {
                "emulated: FP32 SGEMM on inputs rounded to TF32 (a CPU has no TF32 units, so the speed is FP32's)"
            }
            Self::Fp16 => "emulated: FP32 SGEMM on inputs rounded to FP16, output rounded to FP16",
            Self::Bf16 => "emulated: FP32 SGEMM on inputs rounded to BF16, output rounded to BF16",
        }
    }

    /// Whether the output is stored in the 16-bit format too.
    fn rounds_output(self) -> bool {
        matches!(self, Self::Fp16 | Self::Bf16)
    }
}

/// Rounds to TF32's 10-bit mantissa, to nearest with ties to even, as tensor cores do.
fn round_to_tf32(x: f32) -> f32 {
    if !x.is_finite() {
        return x;
    }
    let bits = x.to_bits();
    let lsb = (bits >> 13) & 1;
    f32::from_bits(bits.wrapping_add(0x0fff + lsb) & !0x1fff)
}

/// One format's figures.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PrecisionRow {
    /// `fp32`, `tf32`, `fp16` or `bf16`.
    pub precision: &'static str,
    /// What ran, in words.
    pub compute: &'static str,
    /// Milliseconds per product.
    pub ms: Summary,
    /// 2n³ / median time, in TFLOP/s.
    pub tflops: f64,
    /// The device's estimated dense peak for this format, when known.
    pub peak_tflops: Option<f64>,
    /// Largest |result − FP64 reference|.
    pub max_abs_error: f64,
    /// That error divided by the largest |reference| element.
    pub max_rel_error: f64,
    /// True when the CPU backend emulated the format (its speed is FP32's).
    pub emulated: bool,
}

/// The shoot-out.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PrecisionResult {
    /// Matrix side.
    pub size: usize,
    /// The format the errors are measured against.
    pub reference: &'static str,
    /// One row per format.
    pub rows: Vec<PrecisionRow>,
    /// Where the peak figures come from.
    pub peak_note: &'static str,
    /// Every timed product, one format after another, as a Chrome trace.
    pub trace: Trace,
}

impl PrecisionResult {
    fn new(size: usize, rows: Vec<PrecisionRow>, trace: Trace) -> Self {
        Self {
            size,
            reference: "fp64",
            rows,
            peak_note: PEAK_NOTE,
            trace,
        }
    }
}

/// The trace: one track (the GPU stream, or the CPU), each format's products on it.
fn trace_of(n: usize, on_gpu: bool, runs: &[(Format, Vec<Interval>)]) -> Trace {
    let (clock, lane, cat) = if on_gpu {
        (
            "CUDA events around each product, placed at the host time its start event was recorded",
            "GPU stream: cuBLAS GEMMs",
            "kernel",
        )
    } else {
        (
            "the host's monotonic clock (Instant)",
            "CPU: SGEMM on rounded inputs",
            "work",
        )
    };
    let mut trace = TraceBuilder::new("precision shoot-out", on_gpu, clock);
    let track = trace.track(lane);
    for (format, intervals) in runs {
        let name = format!("GEMM {} {n}×{n}", format.name().to_uppercase());
        trace.samples(track, &name, cat, intervals);
    }
    trace.finish()
}

const PEAK_NOTE: &str = "peak = SMs × SM clock (the datasheet's where known, else NVML's maximum) × dense FLOP per clock per SM for this architecture (spec-sheet rates; GeForce cards run FP16 with FP32 accumulation at half the tensor rate)";

/// Largest absolute and relative error of `result` against `reference`.
pub fn errors(result: &[f64], reference: &[f64]) -> (f64, f64) {
    let scale = reference.iter().fold(0.0f64, |m, r| m.max(r.abs()));
    let worst = result
        .iter()
        .zip(reference)
        .fold(0.0f64, |m, (x, r)| m.max((x - r).abs()));
    (worst, if scale > 0.0 { worst / scale } else { worst })
}

/// The largest relative error (max |error| ÷ max |reference|) a correct product of
/// side `n` in `format` should show on inputs in [-1, 1), with u the format's unit
/// roundoff: up to u for rounding the output, u per product term for rounding the
/// inputs — about (3/16)·u·√n relative to the largest entry, since the terms' errors add
/// like a random walk while the largest entry grows like √n — and FP32 accumulation,
/// at most n/2 units of 2⁻²⁴. Doubled for margin. Used by the selftest.
pub fn tolerance(format: Format, n: usize) -> f64 {
    let u = match format {
        Format::Fp32 => 2f64.powi(-24),
        Format::Tf32 | Format::Fp16 => 2f64.powi(-11),
        Format::Bf16 => 2f64.powi(-8),
    };
    let n = n as f64;
    2.0 * (u * (1.0 + 3.0 / 16.0 * n.sqrt()) + 2f64.powi(-24) * n / 2.0)
}

/// A row's measured figures; the caller adds what ran, the peak and `emulated`.
fn measured(p: Format, n: usize, ms: Summary, out: &[f64], reference: &[f64]) -> PrecisionRow {
    let (max_abs_error, max_rel_error) = errors(out, reference);
    PrecisionRow {
        precision: p.name(),
        compute: "",
        tflops: 2.0 * (n as f64).powi(3) / (ms.median * 1e-3) / 1e12,
        ms,
        peak_tflops: None,
        max_abs_error,
        max_rel_error,
        emulated: false,
    }
}

/// The inputs every run multiplies, and their FP64 product on the CPU.
pub(crate) fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    (cpu::random_matrix(n * n, 11), cpu::random_matrix(n * n, 12))
}

fn cpu_reference(n: usize, a: &[f32], b: &[f32]) -> Vec<f64> {
    let mut c = vec![0.0f64; n * n];
    cpu::dgemm(n, &cpu::to_f64(a), &cpu::to_f64(b), &mut c);
    c
}

/// Dense FLOP per clock per SM for `p` on compute capability `cc`, from NVIDIA's
/// architecture whitepapers (FP32 on CUDA cores; the others on tensor cores).
pub fn flop_per_clock_per_sm(cc: &str, p: Format) -> Option<f64> {
    let (fp32, fp16_tensor) = match cc {
        "7.0" => (128.0, 1024.0),
        "7.5" => (128.0, 1024.0),
        "8.0" => (128.0, 2048.0),
        "8.6" | "8.7" | "8.9" => (256.0, 1024.0),
        "9.0" => (256.0, 4096.0),
        _ => return None,
    };
    match (p, cc) {
        (Format::Fp32, _) => Some(fp32),
        // Volta has no TF32: cuBLAS falls back to FP32 arithmetic.
        (Format::Tf32, "7.0" | "7.5") => Some(fp32),
        (Format::Tf32, _) => Some(fp16_tensor / 2.0),
        (Format::Bf16, "7.0" | "7.5") => None,
        (Format::Fp16 | Format::Bf16, _) => Some(fp16_tensor),
    }
}

/// The card's estimated dense peak for `p`, in TFLOP/s.
pub fn peak_tflops(card: &DeviceCard, p: Format) -> Option<f64> {
    let per_sm = flop_per_clock_per_sm(card.compute_capability.as_deref()?, p)?;
    let sms = f64::from(card.sm_count?);
    // NVIDIA quotes FP32 (CUDA cores) at a higher clock than the tensor-core formats.
    let datasheet = match p {
        Format::Fp32 => crate::gpu::card::datasheet_cuda_core_clock_mhz(&card.name, card.sm_count),
        _ => card.datasheet_clock_mhz,
    };
    let clock_hz = f64::from(datasheet.or(card.sm_clock_max_mhz)?) * 1e6;
    Some(per_sm * sms * clock_hz / 1e12)
}

/// A storage type the shoot-out uploads inputs in and reads the product back from.
trait Stored: BlasScalar {
    fn from_f32(x: f32) -> Self;
    fn to_f64(self) -> f64;
}

impl Stored for f32 {
    fn from_f32(x: f32) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Stored for f64 {
    fn from_f32(x: f32) -> Self {
        f64::from(x)
    }
    fn to_f64(self) -> f64 {
        self
    }
}

impl Stored for f16 {
    fn from_f32(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}

impl Stored for bf16 {
    fn from_f32(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}

/// `a` and `b` on the device in the format's storage type, and room for the product.
struct Operands<T> {
    a: DeviceBuffer<T>,
    b: DeviceBuffer<T>,
    c: DeviceBuffer<T>,
}

impl<T: Stored> Operands<T> {
    fn upload(stream: &Stream, a: &[f32], b: &[f32]) -> Result<Self, ExperimentError> {
        let convert = |v: &[f32]| v.iter().map(|&x| T::from_f32(x)).collect::<Vec<T>>();
        Ok(Self {
            a: stream.upload(&convert(a))?,
            b: stream.upload(&convert(b))?,
            c: stream.zeros(a.len())?,
        })
    }

    fn gemm(&mut self, blas: &Blas, n: usize, compute: Compute) -> Result<(), ExperimentError> {
        blas.gemm(
            Operand::new(&self.a, n, n),
            Operand::new(&self.b, n, n),
            Output::new(&mut self.c, n, n),
            compute,
        )?;
        Ok(())
    }
}

/// One format on the GPU: timed products, and the last product as FP64.
fn time_format<T: Stored>(
    gpu: &mut Gpu,
    n: usize,
    (a, b): (&[f32], &[f32]),
    compute: Compute,
    (deadline, origin): (&Deadline, Instant),
) -> Result<(Summary, Vec<f64>, Vec<Interval>), ExperimentError> {
    let blas = gpu.blas();
    let stream = gpu.stream().clone();
    let mut operands = Operands::<T>::upload(&stream, a, b)?;
    let mut events = gpu.event_clock()?;
    let mut clock = Recorded::new(&mut events, origin);
    let ms = repeat(&mut clock, REPS, deadline, || {
        operands.gemm(&blas, n, compute)
    })?;
    let out = stream
        .download(&operands.c)?
        .into_iter()
        .map(T::to_f64)
        .collect();
    Ok((ms, out, clock.take()))
}

/// The product of `a` and `b` in `p` on the GPU, timed, as FP64.
pub(crate) fn run_format(
    gpu: &mut Gpu,
    p: Format,
    n: usize,
    inputs: (&[f32], &[f32]),
    deadline: (&Deadline, Instant),
) -> Result<(Summary, Vec<f64>, Vec<Interval>), ExperimentError> {
    match p {
        Format::Fp32 => time_format::<f32>(gpu, n, inputs, Compute::F32, deadline),
        Format::Tf32 => time_format::<f32>(gpu, n, inputs, Compute::F32FastTf32, deadline),
        Format::Fp16 => time_format::<f16>(gpu, n, inputs, Compute::F32, deadline),
        Format::Bf16 => time_format::<bf16>(gpu, n, inputs, Compute::F32, deadline),
    }
}

/// The FP64 reference product computed by cuBLAS DGEMM.
fn gpu_reference(
    gpu: &mut Gpu,
    n: usize,
    a: &[f32],
    b: &[f32],
) -> Result<Vec<f64>, ExperimentError> {
    let blas = gpu.blas();
    let stream = gpu.stream().clone();
    let mut operands = Operands::<f64>::upload(&stream, a, b)?;
    operands.gemm(&blas, n, Compute::F64)?;
    Ok(stream.download(&operands.c)?)
}

/// The experiment.
pub struct Precision;

impl Experiment for Precision {
    const NAME: &'static str = "precision";
    const DIRECTIVE: &'static str = "precision-shootout";
    const LESSON: &'static str = "mixed-precision";
    const TITLE: &'static str = "Matmul precision shoot-out";
    const SUMMARY: &'static str =
        "The same GEMM in FP32, TF32, FP16 and BF16: TFLOP/s and error against FP64";
    type Params = PrecisionParams;
    type Output = PrecisionResult;

    const PREDICT: &'static [Quantity] = &[
        Quantity {
            key: "precision.bf16_speedup",
            unit: "×",
            scale: Scale::Ratio,
            on: On::Gpu,
            when: None,
        },
        Quantity {
            key: "precision.bf16_rel_error",
            unit: "",
            scale: Scale::Ratio,
            on: On::Cpu,
            when: None,
        },
    ];

    fn measure(key: &str, _: &PrecisionParams, r: &PrecisionResult) -> Option<f64> {
        let row = |name: &str| r.rows.iter().find(|row| row.precision == name);
        match key {
            "precision.bf16_speedup" => Some(row("fp32")?.ms.median / row("bf16")?.ms.median),
            "precision.bf16_rel_error" => Some(row("bf16")?.max_rel_error),
            _ => None,
        }
    }

    fn rules(limits: &Limits) -> Vec<Rule> {
        vec![Rule::Range {
            field: "size",
            min: MIN_SIZE as u64,
            max: limits.max_matmul_size as u64,
            cap: true,
        }]
    }

    fn method(p: &PrecisionParams) -> String {
        format!(
            "{n} × {n} GEMM per format, {w} warm-up then {reps} repetitions, median; GPU: cuBLAS gemm_ex timed with CUDA events, reference cuBLAS DGEMM (FP64); CPU: SGEMM (TF32/FP16/BF16 emulated by rounding) timed with a host clock, reference FP64 DGEMM; TFLOP/s = 2n³ / median time",
            n = p.size,
            w = REPS.warmups,
            reps = REPS.timed
        )
    }

    fn run_cpu(
        params: &PrecisionParams,
        deadline: &Deadline,
    ) -> Result<PrecisionResult, ExperimentError> {
        let n = params.size;
        let (a, b) = inputs(n);
        let reference = cpu_reference(n, &a, &b);
        let mut rows = Vec::new();
        let (origin, mut runs) = (Instant::now(), Vec::new());
        for p in Format::ALL {
            deadline.check()?;
            let ra: Vec<f32> = a.iter().map(|&x| p.round(x)).collect();
            let rb: Vec<f32> = b.iter().map(|&x| p.round(x)).collect();
            let mut c = vec![0.0f32; n * n];
            let mut host = HostClock::default();
            let mut clock = Recorded::new(&mut host, origin);
            let ms = repeat::<_, ExperimentError>(&mut clock, REPS, deadline, || {
                cpu::sgemm(n, &ra, &rb, &mut c);
                std::hint::black_box(&c);
                Ok(())
            })?;
            runs.push((p, clock.take()));
            let out: Vec<f64> = c
                .iter()
                .map(|&x| f64::from(if p.rounds_output() { p.round(x) } else { x }))
                .collect();
            rows.push(PrecisionRow {
                compute: p.cpu_compute(),
                emulated: p != Format::Fp32,
                ..measured(p, n, ms, &out, &reference)
            });
        }
        Ok(PrecisionResult::new(n, rows, trace_of(n, false, &runs)))
    }

    fn run_gpu(
        gpu: &mut Gpu,
        params: &PrecisionParams,
        deadline: &Deadline,
    ) -> Result<PrecisionResult, ExperimentError> {
        let n = params.size;
        let (a, b) = inputs(n);
        let reference = gpu_reference(gpu, n, &a, &b)?;
        let mut rows = Vec::new();
        let (origin, mut runs) = (Instant::now(), Vec::new());
        for p in Format::ALL {
            deadline.check()?;
            let (ms, out, timed) = run_format(gpu, p, n, (&a, &b), (deadline, origin))?;
            runs.push((p, timed));
            rows.push(PrecisionRow {
                compute: p.gpu_compute(),
                peak_tflops: peak_tflops(gpu.card(), p),
                ..measured(p, n, ms, &out, &reference)
            });
        }
        Ok(PrecisionResult::new(n, rows, trace_of(n, true, &runs)))
    }

    fn table(params: &PrecisionParams, result: &PrecisionResult) -> String {
        let size = params.size;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{size} × {size} GEMM per format against an FP64 reference (median of {} runs)",
            REPS.timed
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
                row.precision,
                row.ms.median,
                row.tflops,
                peak,
                row.max_abs_error,
                row.max_rel_error
            );
        }
        let _ = writeln!(out, "{}", result.peak_note);
        out
    }

    fn describe(params: &PrecisionParams) -> String {
        format!(
            "Runs the same {0} × {0} matrix multiplication in FP32, TF32, FP16 and BF16 and reports TFLOP/s against the device's peak and the largest error against an FP64 reference.",
            crate::format::thousands(params.size as f64)
        )
    }

    fn selftest(gpu: Option<&mut Gpu>) -> Vec<Check> {
        let deadline = Deadline::after(std::time::Duration::from_secs(120));
        let n = 128;
        let judge = |emulated: bool| {
            move |r: &PrecisionResult| {
                let mut ok = r.rows.len() == Format::ALL.len();
                let mut detail = Vec::new();
                for (row, format) in r.rows.iter().zip(Format::ALL) {
                    let limit = tolerance(format, n);
                    ok &= row.max_rel_error <= limit
                        && row.emulated == (emulated && format != Format::Fp32);
                    detail.push(format!(
                        "{} {:.1e} (≤ {limit:.1e})",
                        row.precision, row.max_rel_error
                    ));
                }
                (ok, detail.join(", "))
            }
        };
        let params = PrecisionParams { size: n };
        let mut checks = vec![checked(
            "precision: CPU formats vs FP64 reference, per-format tolerance (n = 128)",
            Precision::run_cpu(&params, &deadline),
            judge(true),
        )];
        match gpu {
            Some(gpu) => {
                checks.push(checked(
                    "precision: cuBLAS formats vs FP64 reference, per-format tolerance (n = 128)",
                    Precision::run_gpu(gpu, &params, &deadline),
                    judge(false),
                ));
                let (a, b) = inputs(n);
                checks.push(checked(
                    "precision: cuBLAS DGEMM vs CPU DGEMM (n = 128)",
                    gpu_reference(gpu, n, &a, &b),
                    |g| {
                        let d = super::selftest::max_rel_diff(g, &cpu_reference(n, &a, &b));
                        (
                            d < 1e-12,
                            format!("max relative difference {d:.2e} (tolerance 1e-12)"),
                        )
                    },
                ));
            }
            None => checks.push(no_gpu("precision: cuBLAS formats and DGEMM vs FP64")),
        }
        checks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn tf32_keeps_ten_mantissa_bits() {
        assert_eq!(round_to_tf32(1.0), 1.0);
        // 1 + 2^-11 is below half a TF32 step (2^-10): rounds down; 1 + 3·2^-11 rounds up.
        assert_eq!(round_to_tf32(1.0 + 2f32.powi(-11)), 1.0);
        assert_eq!(
            round_to_tf32(1.0 + 3.0 * 2f32.powi(-11)),
            1.0 + 2f32.powi(-9)
        );
        assert_eq!(round_to_tf32(-2.5), -2.5);
    }

    #[test]
    fn the_cpu_shoot_out_ranks_formats_by_error() {
        let result = Precision::run_cpu(
            &PrecisionParams { size: 128 },
            &Deadline::after(Duration::from_secs(60)),
        )
        .unwrap();
        let by = |name| result.rows.iter().find(|r| r.precision == name).unwrap();
        let (fp32, tf32, fp16, bf16) = (by("fp32"), by("tf32"), by("fp16"), by("bf16"));
        assert!(!fp32.emulated && tf32.emulated && fp16.emulated && bf16.emulated);
        assert!(fp32.max_abs_error < 1e-3, "{}", fp32.max_abs_error);
        // Fewer mantissa bits, larger error: FP32 (23) < TF32 (10) ≈ FP16 (10) < BF16 (7).
        assert!(fp32.max_abs_error < tf32.max_abs_error);
        assert!(tf32.max_abs_error < bf16.max_abs_error);
        assert!(fp16.max_abs_error < bf16.max_abs_error);
        for row in &result.rows {
            assert!(row.tflops > 0.0 && row.ms.median > 0.0 && row.peak_tflops.is_none());
            let name = format!("GEMM {} 128×128", row.precision.to_uppercase());
            let spans: Vec<_> = result
                .trace
                .trace_events
                .iter()
                .filter(|e| e.ph == "X" && e.name.starts_with(&name))
                .collect();
            let counted: usize = spans.iter().map(|e| e.args.count.unwrap_or(1)).sum();
            assert_eq!(
                counted, row.ms.samples,
                "{name}: every timed product on the trace"
            );
            let ms = spans[0].dur.unwrap() / 1e3;
            assert!(ms >= row.ms.min - 1e-9 && ms <= row.ms.max + 1e-9);
        }
    }

    #[test]
    fn the_h100_peak_matches_its_spec_sheet() {
        // H100 SXM: 132 SMs at 1,830 MHz boost, 4,096 dense FP16 FLOP/clock/SM ≈ 989 TFLOP/s.
        let per_sm = flop_per_clock_per_sm("9.0", Format::Fp16).unwrap();
        let tflops = per_sm * 132.0 * 1.83e9 / 1e12;
        assert!((tflops - 989.4).abs() < 1.0, "{tflops}");
        assert_eq!(flop_per_clock_per_sm("9.0", Format::Tf32), Some(2048.0));
        assert_eq!(flop_per_clock_per_sm("7.0", Format::Bf16), None);
        assert_eq!(flop_per_clock_per_sm("5.2", Format::Fp32), None);
    }

    #[test]
    fn each_format_uses_its_own_datasheet_clock() {
        let mut card = crate::gpu::card::cpu_card("test");
        card.name = "NVIDIA H100 80GB HBM3".into();
        card.compute_capability = Some("9.0".into());
        card.sm_count = Some(132);
        card.sm_clock_max_mhz = Some(1980);
        card.datasheet_clock_mhz = crate::gpu::card::datasheet_clock_mhz(&card.name, card.sm_count);
        let fp32 = peak_tflops(&card, Format::Fp32).unwrap();
        assert!(
            (fp32 - 67.0).abs() < 0.5,
            "FP32 on H100 SXM is 67 TFLOP/s, not {fp32:.1}"
        );
        let fp16 = peak_tflops(&card, Format::Fp16).unwrap();
        assert!((fp16 - 989.4).abs() < 1.0, "{fp16}");
    }
}

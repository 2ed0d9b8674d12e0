//! Experiment: the precision shoot-out (lesson 8). One square GEMM of the student's size
//! in FP32, TF32, FP16 and BF16, each timed and compared with an FP64 reference of the
//! same product: speed (TFLOP/s, next to the device's estimated peak) against accuracy
//! (largest error). On a GPU every format runs through cuBLAS `gemm_ex` with its own
//! compute type and the reference is cuBLAS DGEMM; on the CPU backend FP32 is a real
//! SGEMM and the other formats are emulated by rounding the inputs (and, for the 16-bit
//! formats, the output) to the format, which shows their error honestly but not their
//! speed — the result says so.

use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};
use cudarc::cublas::{Gemm, GemmConfig, result as blas_result};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, DriverError};
use serde::{Deserialize, Serialize};

use super::card::DeviceCard;
use super::cpu;
use super::cuda::CudaHandle;
use super::stats::{Summary, summarize};
use super::{PAST_LIMIT_TRY_SMALLER, check_deadline};

/// Timed repetitions per format, after one warm-up.
pub const REPS: usize = 5;
/// Smallest matrix side accepted.
pub const MIN_SIZE: usize = 64;

/// What the student asks for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrecisionParams {
    /// Matrix side n: the product is n × n times n × n.
    pub size: usize,
}

impl PrecisionParams {
    /// Checks the size against the server's matmul cap.
    pub fn validate(&self, max_size: usize) -> Result<(), String> {
        if (MIN_SIZE..=max_size).contains(&self.size) {
            Ok(())
        } else {
            Err(format!(
                "size must be between {MIN_SIZE} and {max_size} (this server's cap)"
            ))
        }
    }
}

/// The four formats, in the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// IEEE single precision, FP32 arithmetic.
    Fp32,
    /// FP32 storage, tensor-core multiplies with a 10-bit mantissa.
    Tf32,
    /// IEEE half precision inputs and output, FP32 accumulation.
    Fp16,
    /// bfloat16 inputs and output, FP32 accumulation.
    Bf16,
}

impl Precision {
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct PrecisionResult {
    /// Matrix side.
    pub size: usize,
    /// The format the errors are measured against.
    pub reference: &'static str,
    /// One row per format.
    pub rows: Vec<PrecisionRow>,
    /// Where the peak figures come from.
    pub peak_note: &'static str,
}

const PEAK_NOTE: &str = "peak = SMs × max SM clock × dense FLOP per clock per SM for this architecture (spec-sheet rates; GeForce cards run FP16 with FP32 accumulation at half the tensor rate)";

/// Largest absolute and relative error of `result` against `reference`.
pub fn errors(result: &[f64], reference: &[f64]) -> (f64, f64) {
    let scale = reference.iter().fold(0.0f64, |m, r| m.max(r.abs()));
    let worst = result
        .iter()
        .zip(reference)
        .fold(0.0f64, |m, (x, r)| m.max((x - r).abs()));
    (worst, if scale > 0.0 { worst / scale } else { worst })
}

/// A row's measured figures; the caller adds what ran, the peak and `emulated`.
fn measured(p: Precision, n: usize, ms: Summary, out: &[f64], reference: &[f64]) -> PrecisionRow {
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

/// Runs the shoot-out on the CPU backend.
pub fn run_cpu(params: &PrecisionParams, deadline: Instant) -> Result<PrecisionResult, String> {
    let n = params.size;
    let a = cpu::random_matrix(n * n, 11);
    let b = cpu::random_matrix(n * n, 12);
    let reference = {
        let (a64, b64): (Vec<f64>, Vec<f64>) = (
            a.iter().map(|&x| f64::from(x)).collect(),
            b.iter().map(|&x| f64::from(x)).collect(),
        );
        let mut c = vec![0.0f64; n * n];
        cpu::dgemm(n, &a64, &b64, &mut c);
        c
    };
    let mut rows = Vec::new();
    for p in Precision::ALL {
        check_deadline(deadline, PAST_LIMIT_TRY_SMALLER)?;
        let ra: Vec<f32> = a.iter().map(|&x| p.round(x)).collect();
        let rb: Vec<f32> = b.iter().map(|&x| p.round(x)).collect();
        let mut c = vec![0.0f32; n * n];
        cpu::sgemm(n, &ra, &rb, &mut c);
        let mut samples = Vec::with_capacity(REPS);
        for _ in 0..REPS {
            check_deadline(deadline, PAST_LIMIT_TRY_SMALLER)?;
            let start = Instant::now();
            cpu::sgemm(n, &ra, &rb, &mut c);
            std::hint::black_box(&c);
            samples.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let out: Vec<f64> = c
            .iter()
            .map(|&x| f64::from(if p.rounds_output() { p.round(x) } else { x }))
            .collect();
        let ms = summarize(&samples).ok_or("no samples")?;
        rows.push(PrecisionRow {
            compute: p.cpu_compute(),
            emulated: p != Precision::Fp32,
            ..measured(p, n, ms, &out, &reference)
        });
    }
    Ok(PrecisionResult {
        size: n,
        reference: "fp64",
        rows,
        peak_note: PEAK_NOTE,
    })
}

/// Dense FLOP per clock per SM for `p` on compute capability `cc`, from NVIDIA's
/// architecture whitepapers (FP32 on CUDA cores; the others on tensor cores).
pub fn flop_per_clock_per_sm(cc: &str, p: Precision) -> Option<f64> {
    let (fp32, fp16_tensor) = match cc {
        "7.0" => (128.0, 1024.0),
        "7.5" => (128.0, 1024.0),
        "8.0" => (128.0, 2048.0),
        "8.6" | "8.7" | "8.9" => (256.0, 1024.0),
        "9.0" => (256.0, 4096.0),
        _ => return None,
    };
    match (p, cc) {
        (Precision::Fp32, _) => Some(fp32),
        // Volta has no TF32: cuBLAS falls back to FP32 arithmetic.
        (Precision::Tf32, "7.0" | "7.5") => Some(fp32),
        (Precision::Tf32, _) => Some(fp16_tensor / 2.0),
        (Precision::Bf16, "7.0" | "7.5") => None,
        (Precision::Fp16 | Precision::Bf16, _) => Some(fp16_tensor),
    }
}

/// The card's estimated dense peak for `p`, in TFLOP/s.
pub fn peak_tflops(card: &DeviceCard, p: Precision) -> Option<f64> {
    let per_sm = flop_per_clock_per_sm(card.compute_capability.as_deref()?, p)?;
    let sms = f64::from(card.sm_count?);
    let clock_hz = f64::from(card.sm_clock_max_mhz?) * 1e6;
    Some(per_sm * sms * clock_hz / 1e12)
}

/// Runs the shoot-out on `gpu` when given, else on the CPU.
pub fn run(
    gpu: Option<&mut CudaHandle>,
    params: &PrecisionParams,
    deadline: Instant,
) -> Result<PrecisionResult, String> {
    match gpu {
        Some(gpu) => run_cuda(gpu, params, deadline),
        None => run_cpu(params, deadline),
    }
}

/// Runs the shoot-out on the GPU.
pub fn run_cuda(
    gpu: &mut CudaHandle,
    params: &PrecisionParams,
    deadline: Instant,
) -> Result<PrecisionResult, String> {
    let err = |e: DriverError| e.to_string();
    let n = params.size;
    let blas = gpu.blas()?;
    let stream = Arc::clone(&gpu.stream);
    let a = cpu::random_matrix(n * n, 11);
    let b = cpu::random_matrix(n * n, 12);
    let to64 = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let reference = {
        let (a64, b64) = (
            stream.clone_htod(&to64(&a)).map_err(err)?,
            stream.clone_htod(&to64(&b)).map_err(err)?,
        );
        let mut c64 = stream.alloc_zeros::<f64>(n * n).map_err(err)?;
        let side = i32::try_from(n).map_err(|_| "size too large")?;
        let config = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: side,
            n: side,
            k: side,
            alpha: 1.0,
            lda: side,
            ldb: side,
            beta: 0.0,
            ldc: side,
        };
        // SAFETY: all three buffers hold n × n doubles and the config describes n × n
        // matrices with leading dimension n.
        unsafe { blas.gemm(config, &a64, &b64, &mut c64) }
            .map_err(|e| format!("cuBLAS DGEMM failed: {e}"))?;
        stream.clone_dtoh(&c64).map_err(err)?
    };
    let (start, end) = (
        gpu.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?,
        gpu.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(err)?,
    );
    let mut rows = Vec::new();
    for p in Precision::ALL {
        check_deadline(deadline, PAST_LIMIT_TRY_SMALLER)?;
        let mut operands = Operands::upload(&stream, p, &a, &b, n).map_err(err)?;
        operands.gemm(&blas, &stream, p, n)?;
        let mut samples = Vec::with_capacity(REPS);
        for _ in 0..REPS {
            check_deadline(deadline, PAST_LIMIT_TRY_SMALLER)?;
            start.record(&stream).map_err(err)?;
            operands.gemm(&blas, &stream, p, n)?;
            end.record(&stream).map_err(err)?;
            samples.push(f64::from(start.elapsed_ms(&end).map_err(err)?));
        }
        let out = operands.download(&stream).map_err(err)?;
        let ms = summarize(&samples).ok_or("no samples")?;
        rows.push(PrecisionRow {
            compute: p.gpu_compute(),
            peak_tflops: peak_tflops(&gpu.card, p),
            ..measured(p, n, ms, &out, &reference)
        });
    }
    Ok(PrecisionResult {
        size: n,
        reference: "fp64",
        rows,
        peak_note: PEAK_NOTE,
    })
}

/// A, B and C on the device in one format.
enum Operands {
    Single(CudaSlice<f32>, CudaSlice<f32>, CudaSlice<f32>),
    Half(
        CudaSlice<half::f16>,
        CudaSlice<half::f16>,
        CudaSlice<half::f16>,
    ),
    Brain(
        CudaSlice<half::bf16>,
        CudaSlice<half::bf16>,
        CudaSlice<half::bf16>,
    ),
}

impl Operands {
    fn upload(
        stream: &Arc<cudarc::driver::CudaStream>,
        p: Precision,
        a: &[f32],
        b: &[f32],
        n: usize,
    ) -> Result<Self, DriverError> {
        Ok(match p {
            Precision::Fp32 | Precision::Tf32 => Self::Single(
                stream.clone_htod(a)?,
                stream.clone_htod(b)?,
                stream.alloc_zeros(n * n)?,
            ),
            Precision::Fp16 => {
                let h = |v: &[f32]| {
                    v.iter()
                        .map(|&x| half::f16::from_f32(x))
                        .collect::<Vec<_>>()
                };
                Self::Half(
                    stream.clone_htod(&h(a))?,
                    stream.clone_htod(&h(b))?,
                    stream.alloc_zeros(n * n)?,
                )
            }
            Precision::Bf16 => {
                let h = |v: &[f32]| {
                    v.iter()
                        .map(|&x| half::bf16::from_f32(x))
                        .collect::<Vec<_>>()
                };
                Self::Brain(
                    stream.clone_htod(&h(a))?,
                    stream.clone_htod(&h(b))?,
                    stream.alloc_zeros(n * n)?,
                )
            }
        })
    }

    fn download(&self, stream: &Arc<cudarc::driver::CudaStream>) -> Result<Vec<f64>, DriverError> {
        Ok(match self {
            Self::Single(_, _, c) => stream.clone_dtoh(c)?.into_iter().map(f64::from).collect(),
            Self::Half(_, _, c) => stream
                .clone_dtoh(c)?
                .into_iter()
                .map(|x| f64::from(x.to_f32()))
                .collect(),
            Self::Brain(_, _, c) => stream
                .clone_dtoh(c)?
                .into_iter()
                .map(|x| f64::from(x.to_f32()))
                .collect(),
        })
    }

    fn gemm(
        &mut self,
        blas: &cudarc::cublas::CudaBlas,
        stream: &Arc<cudarc::driver::CudaStream>,
        p: Precision,
        n: usize,
    ) -> Result<(), String> {
        let side = i32::try_from(n).map_err(|_| "size too large")?;
        let compute = if p == Precision::Tf32 {
            cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
        } else {
            cublasComputeType_t::CUBLAS_COMPUTE_32F
        };
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (data_type, (pa, _ra), (pb, _rb), (pc, _rc)) = match self {
            Self::Single(a, b, c) => (
                cudaDataType::CUDA_R_32F,
                a.device_ptr(stream),
                b.device_ptr(stream),
                c.device_ptr_mut(stream),
            ),
            Self::Half(a, b, c) => (
                cudaDataType::CUDA_R_16F,
                a.device_ptr(stream),
                b.device_ptr(stream),
                c.device_ptr_mut(stream),
            ),
            Self::Brain(a, b, c) => (
                cudaDataType::CUDA_R_16BF,
                a.device_ptr(stream),
                b.device_ptr(stream),
                c.device_ptr_mut(stream),
            ),
        };
        // SAFETY: the handle is bound to `stream`, on which the three buffers were
        // allocated; each holds n × n elements of `data_type`, matching m = n = k = lda =
        // ldb = ldc = n; alpha and beta are f32 as CUBLAS_COMPUTE_32F* requires, and they
        // outlive the call, which only enqueues work reading them at launch.
        unsafe {
            blas_result::gemm_ex(
                *blas.handle(),
                cublasOperation_t::CUBLAS_OP_N,
                cublasOperation_t::CUBLAS_OP_N,
                side,
                side,
                side,
                (&raw const alpha).cast::<c_void>(),
                pa as *const c_void,
                data_type,
                side,
                pb as *const c_void,
                data_type,
                side,
                (&raw const beta).cast::<c_void>(),
                pc as *mut c_void,
                data_type,
                side,
                compute,
                cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| format!("cuBLAS gemm_ex ({}) failed: {e}", p.name()))
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
        let result = run_cpu(
            &PrecisionParams { size: 128 },
            Instant::now() + Duration::from_secs(60),
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
        }
    }

    #[test]
    fn the_h100_peak_matches_its_spec_sheet() {
        // H100 SXM: 132 SMs at 1,830 MHz boost, 4,096 dense FP16 FLOP/clock/SM ≈ 989 TFLOP/s.
        let per_sm = flop_per_clock_per_sm("9.0", Precision::Fp16).unwrap();
        let tflops = per_sm * 132.0 * 1.83e9 / 1e12;
        assert!((tflops - 989.4).abs() < 1.0, "{tflops}");
        assert_eq!(flop_per_clock_per_sm("9.0", Precision::Tf32), Some(2048.0));
        assert_eq!(flop_per_clock_per_sm("7.0", Precision::Bf16), None);
        assert_eq!(flop_per_clock_per_sm("5.2", Precision::Fp32), None);
    }
}

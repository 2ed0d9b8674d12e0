//! The start-up selftest's GEMM checks: every output type and compute type the
//! experiments ask cuBLAS for, against an FP64 product of the same (already rounded)
//! inputs computed on the CPU. Each case is data ([`GemmCase`]) and its pass/fail rule
//! a pure function ([`limits`]), so the tests below replay each case's cuBLAS call on
//! the CPU (`gpu::blas::replay`) and show that the rule passes what cuBLAS should
//! compute and fails what a wrong configuration would:
//!
//! - inputs exactly representable in the input type (FP32, or FP16/BF16 rounded first)
//!   with an FP32 output carry only FP32 accumulation error, so they get FP32's
//!   tolerance: an FP16 accumulation is caught;
//! - FP16→FP16 and BF16→BF16 (the precision experiment's calls) may differ by the
//!   output's rounding (its unit roundoff, round to nearest) plus FP32 accumulation;
//!   they run on positive inputs with a long inner dimension, where accumulating in
//!   the 16-bit format drifts far past one rounding;
//! - TF32 must be really TF32: its error must be at least [`TF32_FLOOR`] times FP32's
//!   tolerance (an accidental FP32 product is caught) and within TF32's. These run on
//!   a square aligned shape, the precision experiment's kind, where cuBLAS uses tensor
//!   cores.

use half::{bf16, f16};

use crate::experiments::Check;
use crate::experiments::precision::{Format, tolerance};
use crate::gpu::blas::{BlasScalar, Compute, Operand, Output};
use crate::gpu::{Gpu, GpuError};

use super::{max_relative_error, product};
use crate::cpu::random_matrix;

/// Odd, non-square sizes, so a swapped dimension or leading dimension shows.
pub const SHAPE: (usize, usize, usize) = (37, 53, 29);
/// The 16-bit-output cases: a long inner dimension, where a 16-bit accumulation shows.
pub const OUT16_SHAPE: (usize, usize, usize) = (64, 1024, 48);
/// The TF32 cases: square and aligned, like the precision experiment's products.
pub const TF32_SHAPE: (usize, usize, usize) = (128, 128, 128);
/// A TF32 product's error must be at least this many times FP32's tolerance.
pub const TF32_FLOOR: f64 = 4.0;

/// An element type of a GEMM case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// IEEE double.
    F64,
    /// IEEE single.
    F32,
    /// IEEE half.
    F16,
    /// bfloat16.
    Bf16,
}

impl Dtype {
    /// `x` stored in this type, read back.
    pub fn round(self, x: f64) -> f64 {
        match self {
            Self::F64 => x,
            Self::F32 => f64::from(x as f32),
            Self::F16 => f64::from(f16::from_f64(x)),
            Self::Bf16 => f64::from(bf16::from_f64(x)),
        }
    }
}

/// What a case's error is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Expect {
    /// Exact inputs, FP32 accumulation, FP32 output: FP32's tolerance.
    Fp32Accumulate,
    /// FP64 throughout: 1e-12.
    Fp64,
    /// Exact inputs, FP32 accumulation, output rounded to this 16-bit format.
    RoundedOutput(Format),
    /// FP32 inputs multiplied in TF32: between [`TF32_FLOOR`] × FP32's tolerance and
    /// TF32's tolerance.
    Tf32,
}

/// One cuBLAS call the selftest makes.
#[derive(Debug, Clone, Copy)]
pub struct GemmCase {
    /// For the check's name, e.g. `fp16→fp16`.
    pub name: &'static str,
    /// Element type of A and B.
    pub input: Dtype,
    /// Element type of C.
    pub output: Dtype,
    /// cuBLAS's compute type.
    pub compute: Compute,
    /// (m, k, n): A is m × k, C is m × n.
    pub shape: (usize, usize, usize),
    /// B stored n × k and read transposed.
    pub transposed: bool,
    /// Inputs in [0, 1) instead of [-1, 1).
    pub positive: bool,
    /// The rule.
    pub expect: Expect,
}

/// Every case, plain and with B transposed (FP64: plain only).
pub fn cases() -> Vec<GemmCase> {
    use Dtype::*;
    let base = |name, input, output, compute, shape, positive, expect| GemmCase {
        name,
        input,
        output,
        compute,
        shape,
        transposed: false,
        positive,
        expect,
    };
    let fp32 = Expect::Fp32Accumulate;
    let all = [
        base("fp32", F32, F32, Compute::F32, SHAPE, false, fp32),
        base("fp16→fp32", F16, F32, Compute::F32, SHAPE, false, fp32),
        base("bf16→fp32", Bf16, F32, Compute::F32, SHAPE, false, fp32),
        base(
            "fp16→fp16",
            F16,
            F16,
            Compute::F32,
            OUT16_SHAPE,
            true,
            Expect::RoundedOutput(Format::Fp16),
        ),
        base(
            "bf16→bf16",
            Bf16,
            Bf16,
            Compute::F32,
            OUT16_SHAPE,
            true,
            Expect::RoundedOutput(Format::Bf16),
        ),
        base(
            "tf32",
            F32,
            F32,
            Compute::F32FastTf32,
            TF32_SHAPE,
            false,
            Expect::Tf32,
        ),
    ];
    let mut cases: Vec<GemmCase> = all
        .iter()
        .flat_map(|c| {
            [
                *c,
                GemmCase {
                    transposed: true,
                    ..*c
                },
            ]
        })
        .collect();
    cases.push(base(
        "fp64",
        F64,
        F64,
        Compute::F64,
        SHAPE,
        false,
        Expect::Fp64,
    ));
    cases
}

/// The smallest and largest error (max |C − reference| ÷ max |reference|) a case with
/// inner dimension `k` may show.
pub fn limits(expect: Expect, k: usize) -> (f64, f64) {
    let fp32 = tolerance(Format::Fp32, k);
    match expect {
        Expect::Fp32Accumulate => (0.0, fp32),
        Expect::Fp64 => (0.0, 1e-12),
        Expect::RoundedOutput(format) => (0.0, unit_roundoff(format) + fp32),
        Expect::Tf32 => (TF32_FLOOR * fp32, tolerance(Format::Tf32, k)),
    }
}

/// Half the distance between 1 and the next number of `format`.
fn unit_roundoff(format: Format) -> f64 {
    match format {
        Format::Fp32 => 2f64.powi(-24),
        Format::Tf32 | Format::Fp16 => 2f64.powi(-11),
        Format::Bf16 => 2f64.powi(-8),
    }
}

/// The check's verdict on `error`.
pub fn judge(case: &GemmCase, error: f64) -> (bool, String) {
    let (floor, ceiling) = limits(case.expect, case.shape.1);
    let band = if floor > 0.0 {
        format!("{floor:.1e} ≤ error ≤ {ceiling:.1e}")
    } else {
        format!("≤ {ceiling:.1e}")
    };
    (
        error >= floor && error <= ceiling,
        format!("max relative error {error:.1e} ({band})"),
    )
}

/// The case's inputs, A (m × k) and B (k × n, or n × k when transposed), already
/// rounded to its input type.
pub fn inputs(case: &GemmCase) -> (Vec<f64>, Vec<f64>) {
    let (m, k, n) = case.shape;
    let make = |len, seed| -> Vec<f64> {
        random_matrix(len, seed)
            .into_iter()
            .map(|x| {
                case.input
                    .round(f64::from(if case.positive { x.abs() } else { x }))
            })
            .collect()
    };
    (make(m * k, 3), make(k * n, 4))
}

/// The FP64 reference of the case's product.
pub fn reference(case: &GemmCase, a: &[f64], b: &[f64]) -> Vec<f64> {
    let (m, k, n) = case.shape;
    product(a, b, m, k, n, case.transposed)
}

/// Element types a case converts from and to f64.
trait Element: BlasScalar {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
}
impl Element for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}
impl Element for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
}
impl Element for f16 {
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}
impl Element for bf16 {
    fn from_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

/// The case on cuBLAS, C as f64.
fn run<In: Element, Out: Element>(
    gpu: &Gpu,
    case: &GemmCase,
    a: &[f64],
    b: &[f64],
) -> Result<Vec<f64>, GpuError> {
    let (m, k, n) = case.shape;
    let stream = gpu.stream();
    let convert = |v: &[f64]| v.iter().map(|&x| In::from_f64(x)).collect::<Vec<In>>();
    let (da, db) = (stream.upload(&convert(a))?, stream.upload(&convert(b))?);
    let b_operand = if case.transposed {
        Operand::new(&db, n, k).t()
    } else {
        Operand::new(&db, k, n)
    };
    let mut dc = stream.zeros::<Out>(m * n)?;
    gpu.blas().gemm(
        Operand::new(&da, m, k),
        b_operand,
        Output::new(&mut dc, m, n),
        case.compute,
    )?;
    Ok(stream.download(&dc)?.into_iter().map(Out::to_f64).collect())
}

/// One case on the GPU, judged.
fn check(gpu: &Gpu, case: &GemmCase) -> Check {
    let label = format!(
        "first contact: {} GEMM (A·B{}, {:?}) vs CPU FP64",
        case.name,
        if case.transposed { "ᵀ" } else { "" },
        case.shape
    );
    let (a, b) = inputs(case);
    let out = match (case.input, case.output) {
        (Dtype::F32, Dtype::F32) => run::<f32, f32>(gpu, case, &a, &b),
        (Dtype::F64, Dtype::F64) => run::<f64, f64>(gpu, case, &a, &b),
        (Dtype::F16, Dtype::F32) => run::<f16, f32>(gpu, case, &a, &b),
        (Dtype::Bf16, Dtype::F32) => run::<bf16, f32>(gpu, case, &a, &b),
        (Dtype::F16, Dtype::F16) => run::<f16, f16>(gpu, case, &a, &b),
        (Dtype::Bf16, Dtype::Bf16) => run::<bf16, bf16>(gpu, case, &a, &b),
        (input, output) => Err(GpuError::Unsupported(format!(
            "no selftest GEMM from {input:?} to {output:?}"
        ))),
    };
    match out {
        Ok(out) => {
            let error = max_relative_error(&out, &reference(case, &a, &b));
            let (ok, detail) = judge(case, error);
            Check::expect(label, ok, detail)
        }
        Err(e) => Check::error(label, e),
    }
}

/// Every case on the GPU.
pub fn checks(gpu: &Gpu) -> Vec<Check> {
    cases().iter().map(|case| check(gpu, case)).collect()
}

#[cfg(test)]
mod tests;

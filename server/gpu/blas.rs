//! Every GEMM GPU Lab runs on a GPU, in every dtype, through one wrapper around
//! cuBLAS `cublasGemmEx`.
//!
//! **The row-major convention, stated once.** Our matrices are row-major (as in
//! PyTorch and in `cpu::gemm`); cuBLAS is column-major. A row-major `r × c` buffer *is*
//! the column-major `c × r` matrix, its transpose. So the row-major product
//! `C = op(A) · op(B)` is computed as the column-major product `Cᵀ = op(B)ᵀ · op(A)ᵀ`:
//! cuBLAS's first operand is our `B`, its second our `A`, `m` is C's column count and
//! `n` its row count, and each leading dimension is the stored row length. [`plan`]
//! turns the row-major request into that call as plain data ([`GemmCall`]), so tests
//! replay it on a CPU column-major GEMM ([`replay`]) and compare with the row-major
//! reference for every shape the experiments use, without a GPU.

use std::ffi::c_void;

use std::ffi::c_int;

use cudarc::driver::{DevicePtr, DevicePtrMut};
use half::{bf16, f16};
use serde::Serialize;

use super::cublas::{self, Handle};
use super::error::GpuError;
use super::loader::guarded;
use super::stream::{DeviceBuffer, Element, Stream};

/// Element types cuBLAS multiplies.
pub trait BlasScalar: Element {
    /// cuBLAS's name for the type (`cudaDataType`).
    const DATA_TYPE: c_int;
    /// Lower-case name for messages.
    const NAME: &'static str;
}

impl BlasScalar for f32 {
    const DATA_TYPE: c_int = cublas::R_32F;
    const NAME: &'static str = "fp32";
}
impl BlasScalar for f64 {
    const DATA_TYPE: c_int = cublas::R_64F;
    const NAME: &'static str = "fp64";
}
impl BlasScalar for f16 {
    const DATA_TYPE: c_int = cublas::R_16F;
    const NAME: &'static str = "fp16";
}
impl BlasScalar for bf16 {
    const DATA_TYPE: c_int = cublas::R_16BF;
    const NAME: &'static str = "bf16";
}

/// The arithmetic cuBLAS uses inside the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Compute {
    /// FP32 multiply-add (`CUBLAS_COMPUTE_32F`); FP16/BF16 inputs accumulate in FP32.
    F32,
    /// FP32 storage, tensor-core multiplies on TF32 inputs (`CUBLAS_COMPUTE_32F_FAST_TF32`).
    F32FastTf32,
    /// FP64 throughout (`CUBLAS_COMPUTE_64F`): the reference.
    F64,
}

/// Where a row-major matrix sits in its buffer and whether the product reads it
/// transposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Rows as stored.
    pub rows: usize,
    /// Columns as stored (the row length, so the leading dimension).
    pub cols: usize,
    /// First element, counted from the buffer's start.
    pub offset: usize,
    /// Read as its transpose.
    pub transposed: bool,
}

impl Layout {
    /// A stored `rows × cols` matrix at the start of its buffer.
    pub const fn new(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            offset: 0,
            transposed: false,
        }
    }

    /// The same matrix read transposed.
    pub const fn t(self) -> Self {
        Self {
            transposed: !self.transposed,
            ..self
        }
    }

    /// Rows `first .. first + rows` of this stored matrix (a batch out of a data set).
    pub const fn window(self, first: usize, rows: usize) -> Self {
        Self {
            offset: self.offset + first * self.cols,
            rows,
            ..self
        }
    }

    /// (rows, cols) as the product sees it.
    pub const fn shape(&self) -> (usize, usize) {
        if self.transposed {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        }
    }

    /// Elements of the buffer the matrix reaches into.
    pub const fn extent(&self) -> usize {
        self.offset + self.rows * self.cols
    }
}

/// One `cublasGemmEx` call as data: operations, sizes, leading dimensions and element
/// offsets of cuBLAS's A, B and C (its A is our B; see the module header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmCall {
    /// cuBLAS's A read transposed.
    pub transa: bool,
    /// cuBLAS's B read transposed.
    pub transb: bool,
    /// Rows of cuBLAS's (column-major) C.
    pub m: usize,
    /// Columns of cuBLAS's C.
    pub n: usize,
    /// The inner dimension.
    pub k: usize,
    /// Leading dimension of cuBLAS's A.
    pub lda: usize,
    /// Leading dimension of cuBLAS's B.
    pub ldb: usize,
    /// Leading dimension of C.
    pub ldc: usize,
    /// Offset of cuBLAS's A (our B) in its buffer.
    pub a_offset: usize,
    /// Offset of cuBLAS's B (our A) in its buffer.
    pub b_offset: usize,
    /// Offset of C in its buffer.
    pub c_offset: usize,
}

/// The cuBLAS call computing row-major `c = op(a) · op(b)`.
pub fn plan(a: Layout, b: Layout, c: Layout) -> Result<GemmCall, GpuError> {
    let ((m, k), (k2, n)) = (a.shape(), b.shape());
    if k != k2 {
        return Err(GpuError::Shape(format!(
            "inner dimensions differ: {m}×{k} times {k2}×{n}"
        )));
    }
    if c.transposed || (c.rows, c.cols) != (m, n) {
        return Err(GpuError::Shape(format!(
            "the product is {m}×{n}, the output is {}×{}{}",
            c.rows,
            c.cols,
            if c.transposed { " (transposed)" } else { "" }
        )));
    }
    Ok(GemmCall {
        transa: b.transposed,
        transb: a.transposed,
        m: n,
        n: m,
        k,
        lda: b.cols,
        ldb: a.cols,
        ldc: c.cols,
        a_offset: b.offset,
        b_offset: a.offset,
        c_offset: c.offset,
    })
}

/// Runs `call` exactly as cuBLAS defines it (column-major, `op`, leading dimensions,
/// offsets), with `alpha = 1` and `beta = 0`, on host buffers in FP64: cuBLAS's A is
/// `cublas_a` (our B's buffer), its B is `cublas_b` (our A's buffer).
pub fn replay(call: &GemmCall, cublas_a: &[f64], cublas_b: &[f64], c: &mut [f64]) {
    let a = &cublas_a[call.a_offset..];
    let b = &cublas_b[call.b_offset..];
    let c = &mut c[call.c_offset..];
    let op_a = |i: usize, p: usize| {
        if call.transa {
            a[p + i * call.lda]
        } else {
            a[i + p * call.lda]
        }
    };
    let op_b = |p: usize, j: usize| {
        if call.transb {
            b[j + p * call.ldb]
        } else {
            b[p + j * call.ldb]
        }
    };
    for j in 0..call.n {
        for i in 0..call.m {
            c[i + j * call.ldc] = (0..call.k).map(|p| op_a(i, p) * op_b(p, j)).sum();
        }
    }
}

/// How far the planned call for row-major `op(a) · op(b)` lands from the definition of
/// the product, on deterministic host data: the largest absolute difference between
/// [`replay`] and a plain triple loop over the row-major operands. Zero (to rounding)
/// means the mapping onto cuBLAS's column-major view is right for these layouts.
pub fn plan_error(a: Layout, b: Layout) -> Result<f64, GpuError> {
    let ((m, k), (_, n)) = (a.shape(), b.shape());
    let data = |len: usize, seed: usize| -> Vec<f64> {
        (0..len)
            .map(|i| (((i * 7919 + seed * 104_729) % 1000) as f64 - 500.0) / 250.0)
            .collect()
    };
    let (ha, hb) = (data(a.extent(), 1), data(b.extent(), 2));
    let at = |data: &[f64], l: Layout, r: usize, c: usize| {
        let (r, c) = if l.transposed { (c, r) } else { (r, c) };
        data[l.offset + r * l.cols + c]
    };
    let call = plan(a, b, Layout::new(m, n))?;
    let mut got = vec![0.0; m * n];
    replay(&call, &hb, &ha, &mut got);
    let mut worst = 0.0f64;
    for i in 0..m {
        for j in 0..n {
            let expected: f64 = (0..k).map(|p| at(&ha, a, i, p) * at(&hb, b, p, j)).sum();
            worst = worst.max((got[i * n + j] - expected).abs());
        }
    }
    Ok(worst)
}

/// The layouts of every product the experiments run, at small sizes: square products
/// (matmul crossover, precision shoot-out) and the training step's five GEMMs (batch 5
/// from a 24-row data set with 4 features, hidden 6, 3 classes), plus a transposed pair.
pub fn layouts_in_use() -> Vec<(&'static str, Layout, Layout)> {
    let (b, f, h, c, rows) = (5, 4, 6, 3, 24);
    let x = Layout::new(rows, f).window(7, b);
    vec![
        ("square n×n · n×n", Layout::new(16, 16), Layout::new(16, 16)),
        ("training x·W1 (batch window)", x, Layout::new(f, h)),
        ("training a1·W2", Layout::new(b, h), Layout::new(h, c)),
        ("training a1ᵀ·dz2", Layout::new(b, h).t(), Layout::new(b, c)),
        ("training dz2·W2ᵀ", Layout::new(b, c), Layout::new(h, c).t()),
        ("training xᵀ·dz1 (batch window)", x.t(), Layout::new(b, h)),
        (
            "both transposed",
            Layout::new(3, 5).t(),
            Layout::new(2, 3).t(),
        ),
    ]
}

/// A matrix operand in a device buffer.
pub struct Operand<'a, T> {
    buffer: &'a DeviceBuffer<T>,
    layout: Layout,
}

impl<'a, T> Operand<'a, T> {
    /// The stored `rows × cols` matrix at the start of `buffer`.
    pub fn new(buffer: &'a DeviceBuffer<T>, rows: usize, cols: usize) -> Self {
        Self {
            buffer,
            layout: Layout::new(rows, cols),
        }
    }

    /// Read transposed.
    pub fn t(self) -> Self {
        Self {
            layout: self.layout.t(),
            ..self
        }
    }

    /// Rows `first .. first + rows` of the stored matrix.
    pub fn window(self, first: usize, rows: usize) -> Self {
        Self {
            layout: self.layout.window(first, rows),
            ..self
        }
    }
}

/// The output matrix, `rows × cols` at the start of its buffer.
pub struct Output<'a, T> {
    buffer: &'a mut DeviceBuffer<T>,
    layout: Layout,
}

impl<'a, T> Output<'a, T> {
    /// `rows × cols` at the start of `buffer`.
    pub fn new(buffer: &'a mut DeviceBuffer<T>, rows: usize, cols: usize) -> Self {
        Self {
            buffer,
            layout: Layout::new(rows, cols),
        }
    }
}

fn within<T>(buffer: &DeviceBuffer<T>, layout: &Layout, name: &str) -> Result<(), GpuError> {
    if layout.extent() <= buffer.len() {
        Ok(())
    } else {
        Err(GpuError::Shape(format!(
            "{name} reaches element {} of a {}-element buffer",
            layout.extent(),
            buffer.len()
        )))
    }
}

fn int(x: usize) -> Result<i32, GpuError> {
    i32::try_from(x).map_err(|_| GpuError::Unsupported(format!("{x} is too large for cuBLAS")))
}

/// The cuBLAS handle, bound to the stream its products are queued on.
pub struct Blas {
    handle: Handle,
    stream: Stream,
}

impl Blas {
    /// A handle on `stream`.
    pub(super) fn new(stream: &Stream) -> Result<Self, GpuError> {
        let raw = stream.raw().cu_stream().cast();
        // SAFETY: `raw` is the CUstream of `stream`, a live stream of this context;
        // `Blas` keeps a clone of `stream`, so the stream outlives the handle.
        let handle = guarded(|| unsafe { Handle::new(raw) })??;
        Ok(Self {
            handle,
            stream: stream.clone(),
        })
    }

    /// Queues row-major `c = op(a) · op(b)` with `compute` arithmetic.
    pub fn gemm<In: BlasScalar, Out: BlasScalar>(
        &self,
        a: Operand<'_, In>,
        b: Operand<'_, In>,
        c: Output<'_, Out>,
        compute: Compute,
    ) -> Result<(), GpuError> {
        within(a.buffer, &a.layout, "A")?;
        within(b.buffer, &b.layout, "B")?;
        within(c.buffer, &c.layout, "C")?;
        let call = plan(a.layout, b.layout, c.layout)?;
        let stream = self.stream.raw();
        let element = |offset: usize, size: usize| (offset * size) as u64;
        let (a_ptr, _ra) = b.buffer.device_ptr(stream);
        let (b_ptr, _rb) = a.buffer.device_ptr(stream);
        let (c_ptr, _rc) = c.buffer.device_ptr_mut(stream);
        let a_ptr = a_ptr + element(call.a_offset, size_of::<In>());
        let b_ptr = b_ptr + element(call.b_offset, size_of::<In>());
        let c_ptr = c_ptr + element(call.c_offset, size_of::<Out>());
        let op = |t: bool| if t { cublas::OP_T } else { cublas::OP_N };
        let (one32, zero32, one64, zero64) = (1.0f32, 0.0f32, 1.0f64, 0.0f64);
        let (alpha, beta, compute_type) = match compute {
            Compute::F32 => (
                (&raw const one32).cast::<c_void>(),
                (&raw const zero32).cast::<c_void>(),
                cublas::COMPUTE_32F,
            ),
            Compute::F32FastTf32 => (
                (&raw const one32).cast::<c_void>(),
                (&raw const zero32).cast::<c_void>(),
                cublas::COMPUTE_32F_FAST_TF32,
            ),
            Compute::F64 => (
                (&raw const one64).cast::<c_void>(),
                (&raw const zero64).cast::<c_void>(),
                cublas::COMPUTE_64F,
            ),
        };
        let what = format!("gemm_ex ({} → {}, {compute:?})", In::NAME, Out::NAME);
        // SAFETY: the handle is bound to `stream`, on which all three buffers are used;
        // `within` checked that each matrix (offset + rows × cols elements) lies inside
        // its buffer, and `plan` derived m, n, k and the leading dimensions (the stored
        // row lengths) from those same layouts, so cuBLAS reads and writes only inside
        // them; each buffer's element type is the data type passed beside it; alpha and
        // beta have the type the compute type requires (f64 for 64F, f32 otherwise) and
        // outlive the call, which reads them before it returns.
        unsafe {
            self.handle.gemm_ex(
                (op(call.transa), op(call.transb)),
                (int(call.m)?, int(call.n)?, int(call.k)?),
                alpha,
                (a_ptr as *const c_void, In::DATA_TYPE, int(call.lda)?),
                (b_ptr as *const c_void, In::DATA_TYPE, int(call.ldb)?),
                beta,
                (c_ptr as *mut c_void, Out::DATA_TYPE, int(call.ldc)?),
                compute_type,
                &what,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planned_call_computes_the_row_major_product_for_every_shape_used() {
        for (name, a, b) in layouts_in_use() {
            let error = plan_error(a, b).unwrap();
            assert!(error < 1e-9, "{name}: {error}");
        }
    }

    #[test]
    fn a_wrong_mapping_would_be_caught() {
        // Swapping which of our operands goes first breaks every non-symmetric product.
        let (a, b) = (Layout::new(3, 4), Layout::new(4, 2));
        let mut call = plan(a, b, Layout::new(3, 2)).unwrap();
        call.transa = !call.transa;
        let ha: Vec<f64> = (0..12).map(f64::from).collect();
        let hb: Vec<f64> = (0..8).map(|x| f64::from(x) * 0.5).collect();
        let (mut right, mut wrong) = (vec![0.0; 6], vec![0.0; 6]);
        replay(
            &plan(a, b, Layout::new(3, 2)).unwrap(),
            &hb,
            &ha,
            &mut right,
        );
        replay(&call, &hb, &ha, &mut wrong);
        assert_ne!(right, wrong);
        // Row 0 of A is [0, 1, 2, 3]; column 0 of B is [0, 2, 4, 6] · 0.5 = [0, 1, 2, 3].
        assert_eq!(right[0], 14.0);
    }

    #[test]
    fn plans_refuse_shapes_that_do_not_fit() {
        assert!(plan(Layout::new(2, 3), Layout::new(4, 2), Layout::new(2, 2)).is_err());
        assert!(plan(Layout::new(2, 3), Layout::new(3, 2), Layout::new(2, 3)).is_err());
        let call = plan(Layout::new(2, 3), Layout::new(3, 4), Layout::new(2, 4)).unwrap();
        assert_eq!(
            (call.m, call.n, call.k, call.lda, call.ldb, call.ldc),
            (4, 2, 3, 4, 3, 4),
            "cuBLAS sees Cᵀ (4 × 2) = Bᵀ · Aᵀ"
        );
        assert_eq!(Layout::new(10, 4).window(3, 2).extent(), 20);
    }
}

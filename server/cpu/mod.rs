//! The CPU reference: the math every GPU path is checked against, and the CPU backend's
//! building blocks. Matrix products go through `faer` (pure Rust, safe API; its x86
//! kernels pick AVX-512 or AVX2 at run time, [`kernel`] says which), so this module
//! needs no `unsafe`; the rest is a busy loop (calibrated by `measure::calibrate`) and
//! repeatable pseudo-random data. [`parallel`] decides, from a measurement on this
//! machine, when a product uses every core and splits it; `handoff` runs the blocks
//! on helper threads.
//!
//! Why faer: on the project's 2-core VM its single-threaded kernels ran at 0.97–1.09×
//! OpenBLAS's single-threaded speed (n = 128–1024); the `gemm` crate (without its
//! nightly AVX-512 feature) at 0.64–0.79×, and `ndarray`'s `matrixmultiply`, which has
//! no AVX-512 kernels, took 2.4–3.9× numpy's time (tests/gpu/README.md).
//!
//! Matrices are row-major slices. [`Mat`] is a view of one, optionally read transposed,
//! which is how the training run's backward pass uses its weights and activations.

mod handoff;
pub mod parallel;

use faer::{Accum, MatMut, MatRef};

pub use parallel::{Threading, threading};

/// The kernels faer 0.24 runs on this CPU: it checks the CPU's features at run time,
/// as here, and uses private-gemm-x86's AVX-512 kernels when AVX-512F is there, its
/// AVX2 ones with AVX2 and FMA, else the `gemm` crate, whose own dispatch takes its
/// NEON kernels on Arm (every aarch64 CPU has NEON: Apple silicon, Grace, Jetson) and
/// portable ones elsewhere. (Products of at most 16³ multiply-adds go to `nano-gemm`
/// whatever the CPU.)
pub fn kernel() -> &'static str {
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            return "faer 0.24, NEON kernels (gemm)";
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "faer 0.24, AVX-512 kernels (private-gemm-x86)";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "faer 0.24, AVX2+FMA kernels (private-gemm-x86)";
        }
    }
    "faer 0.24, portable kernels (gemm)"
}

/// The element types [`gemm`] multiplies: single and double precision.
pub trait Scalar: faer::traits::ComplexField + Copy + PartialEq + std::ops::MulAssign {
    /// Additive identity.
    const ZERO: Self;
    /// Multiplicative identity.
    const ONE: Self;
}

impl Scalar for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

impl Scalar for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

/// A row-major matrix view for [`gemm`]: `rows × cols` as stored, optionally transposed.
#[derive(Clone, Copy, Debug)]
pub struct Mat<'a, T = f32> {
    /// Row-major data, at least rows × cols long.
    pub data: &'a [T],
    /// Rows as stored.
    pub rows: usize,
    /// Columns as stored.
    pub cols: usize,
    /// Use the transpose.
    pub t: bool,
}

impl<'a, T> Mat<'a, T> {
    /// A stored `rows × cols` matrix.
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            t: false,
        }
    }

    /// The same matrix read transposed.
    pub fn t(self) -> Self {
        Self { t: !self.t, ..self }
    }

    /// (rows, cols) as used in the product.
    pub fn shape(&self) -> (usize, usize) {
        if self.t {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        }
    }

    fn view(&self) -> MatRef<'a, T> {
        let stored =
            MatRef::from_row_major_slice(&self.data[..self.rows * self.cols], self.rows, self.cols);
        if self.t { stored.transpose() } else { stored }
    }
}

/// `c = a · b + beta · c` for row-major `c` of shape (rows of a) × (cols of b).
///
/// # Panics
/// When the inner dimensions differ or a buffer is smaller than its shape: both are
/// bugs in the caller, never the student's input.
pub fn gemm<T: Scalar>(a: Mat<'_, T>, b: Mat<'_, T>, beta: T, c: &mut [T]) {
    let ((m, k), (k2, n)) = (a.shape(), b.shape());
    assert_eq!(k, k2, "inner dimensions differ");
    let c = &mut c[..m * n];
    let accumulate = if beta == T::ZERO {
        Accum::Replace
    } else {
        if beta != T::ONE {
            c.iter_mut().for_each(|x| *x *= beta);
        }
        Accum::Add
    };
    let out = MatMut::from_row_major_slice_mut(c, m, n);
    // Products too small to be worth a thread never wait for the measurement.
    let pieces = if 2.0 * (m * n * k) as f64 >= parallel::SMALLEST_PARALLEL_FLOP {
        threading().pieces(m, n, k)
    } else {
        1
    };
    parallel::product(out, accumulate, a.view(), b.view(), pieces);
}

/// Clears the upper halves of this thread's vector registers after a faer kernel
/// ([`CleanUpperVectorState`]); every thread that ran one calls it.
fn clean_upper_vector_state() {
    pulp::Arch::new().dispatch(CleanUpperVectorState);
}

/// faer's x86 kernels (`private-gemm-x86`, generated assembly) return without
/// `vzeroupper`, leaving the upper halves of the vector registers dirty. Until something
/// clears them, every legacy-SSE instruction on this thread — all scalar float code the
/// compiler emits for plain x86-64, in any module — pays for merging them: on the
/// machine in tests/gpu/README.md an Adam update of 4,096 parameters went from 2.0 to
/// 12.5 µs and the CPU training step from 0.03 to 0.10 ms. A function compiled for AVX
/// ends with `vzeroupper`, and pulp's `dispatch` runs this one under the best vector
/// features this CPU has (safely: pulp checks them at run time first).
struct CleanUpperVectorState;

impl pulp::WithSimd for CleanUpperVectorState {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        // One vector op so the function uses the wide registers and gets its vzeroupper.
        let one = simd.splat_f32s(std::hint::black_box(1.0));
        std::hint::black_box(simd.add_f32s(one, one));
    }
}

/// `c = a · b` for square row-major `n × n` matrices in single precision.
pub fn sgemm(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    gemm(Mat::new(a, n, n), Mat::new(b, n, n), 0.0, c);
}

/// `c = a · b` in double precision: the reference every other format is measured against.
pub fn dgemm(n: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    gemm(Mat::new(a, n, n), Mat::new(b, n, n), 0.0, c);
}

/// `iterations` dependent fused multiply-adds: a fixed amount of CPU work that the
/// optimiser cannot remove.
pub fn busy(iterations: u64) -> f32 {
    busy_from(std::hint::black_box(0.5f32), iterations)
}

/// The busy loop from `x`: `x = fma(x, 0.999999, 1e-6)`, `iterations` times. It is
/// what the `busy_f32` kernel computes for each element, from that element's value.
pub fn busy_from(mut x: f32, iterations: u64) -> f32 {
    for _ in 0..iterations {
        x = x.mul_add(0.999_999, 1e-6);
    }
    std::hint::black_box(x)
}

/// Deterministic pseudo-random values in [-1, 1) (xorshift), so runs are repeatable.
pub fn random_matrix(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Widens `v` to double precision.
pub fn to_f64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sgemm_matches_the_definition() {
        let n = 5;
        let a = random_matrix(n * n, 1);
        let b = random_matrix(n * n, 2);
        let mut c = vec![0.0; n * n];
        sgemm(n, &a, &b, &mut c);
        for i in 0..n {
            for j in 0..n {
                let expected: f32 = (0..n).map(|k| a[i * n + k] * b[k * n + j]).sum();
                assert!((c[i * n + j] - expected).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn gemm_handles_transposes_and_beta() {
        // a: 2×3, b: 2×3; a · bᵀ is 2×2.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        let mut c = [0.0; 4];
        gemm(Mat::new(&a, 2, 3), Mat::new(&b, 2, 3).t(), 0.0, &mut c);
        assert_eq!(c, [4.0, 2.0, 10.0, 5.0]);
        let mut d = [0.0; 9];
        gemm(Mat::new(&a, 2, 3).t(), Mat::new(&b, 2, 3), 0.0, &mut d);
        assert_eq!(d, [1.0, 4.0, 1.0, 2.0, 5.0, 2.0, 3.0, 6.0, 3.0]);
        gemm(Mat::new(&a, 2, 3), Mat::new(&b, 2, 3).t(), 1.0, &mut c);
        assert_eq!(c, [8.0, 4.0, 20.0, 10.0], "beta = 1 accumulates");
        gemm(Mat::new(&a, 2, 3), Mat::new(&b, 2, 3).t(), 0.5, &mut c);
        assert_eq!(c, [8.0, 4.0, 20.0, 10.0], "beta = 0.5 halves, then adds");
        let mut nan = [f32::NAN; 4];
        gemm(Mat::new(&a, 2, 3), Mat::new(&b, 2, 3).t(), 0.0, &mut nan);
        assert_eq!(nan, [4.0, 2.0, 10.0, 5.0], "beta = 0 ignores what c held");
    }

    /// `a · b` in double precision from single-precision views, for comparisons.
    fn reference(a: Mat<'_, f32>, b: Mat<'_, f32>) -> Vec<f64> {
        let (wide_a, wide_b) = (to_f64(a.data), to_f64(b.data));
        let (m, n) = (a.shape().0, b.shape().1);
        let mut c = vec![0.0; m * n];
        let widen = |v: Mat<'_, f32>, data| Mat {
            data,
            rows: v.rows,
            cols: v.cols,
            t: v.t,
        };
        gemm(widen(a, &wide_a), widen(b, &wide_b), 0.0, &mut c);
        c
    }

    #[test]
    fn large_and_odd_products_agree_with_double_precision_on_the_pool_and_off_it() {
        // The largest calibration size always uses every core (when there are several).
        let pooled = threading().pieces(512, 512, 512);
        assert_eq!(pooled, threading().cores);
        // Square above any threshold, and ragged transposed products.
        for (m, k, n, ta, tb) in [
            (512, 512, 512, false, false),
            (257, 331, 290, true, false),
            (520, 515, 517, false, true),
            (67, 33, 5, false, true),
        ] {
            let a_data = random_matrix(m * k, 7);
            let b_data = random_matrix(k * n, 8);
            let a = if ta {
                Mat::new(&a_data, k, m).t()
            } else {
                Mat::new(&a_data, m, k)
            };
            let b = if tb {
                Mat::new(&b_data, n, k).t()
            } else {
                Mat::new(&b_data, k, n)
            };
            let mut c = vec![f32::NAN; m * n];
            gemm(a, b, 0.0, &mut c);
            let worst = c
                .iter()
                .zip(reference(a, b))
                .map(|(x, r)| (f64::from(*x) - r).abs())
                .fold(0.0, f64::max);
            assert!(worst < 1e-4, "{m}×{k}×{n}: largest difference {worst:e}");
        }
    }

    #[test]
    fn random_matrices_are_repeatable_and_bounded() {
        assert_eq!(random_matrix(8, 3), random_matrix(8, 3));
        assert_ne!(random_matrix(8, 3), random_matrix(8, 4));
        assert!(
            random_matrix(1000, 5)
                .iter()
                .all(|x| (-1.0..1.0).contains(x))
        );
        assert!(busy(1000).is_finite());
    }
}

//! The CPU reference: the math every GPU path is checked against, and the CPU backend's
//! building blocks. Matrix products go through `ndarray` (multithreaded
//! `matrixmultiply` SGEMM/DGEMM underneath), so this module needs no `unsafe`; the rest
//! is a calibrated busy loop and repeatable pseudo-random data.
//!
//! Matrices are row-major slices. [`Mat`] is a view of one, optionally read transposed,
//! which is how the training run's backward pass uses its weights and activations.

use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, LinalgScalar};

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

    fn view(&self) -> ArrayView2<'a, T> {
        let stored =
            ArrayView2::from_shape((self.rows, self.cols), &self.data[..self.rows * self.cols])
                .expect("a slice of rows × cols elements has that shape");
        if self.t {
            stored.reversed_axes()
        } else {
            stored
        }
    }
}

/// `c = a · b + beta · c` for row-major `c` of shape (rows of a) × (cols of b).
///
/// # Panics
/// When the inner dimensions differ or a buffer is smaller than its shape: both are
/// bugs in the caller, never the student's input.
pub fn gemm<T: LinalgScalar>(a: Mat<'_, T>, b: Mat<'_, T>, beta: T, c: &mut [T]) {
    let ((m, k), (k2, n)) = (a.shape(), b.shape());
    assert_eq!(k, k2, "inner dimensions differ");
    let mut out =
        ArrayViewMut2::from_shape((m, n), &mut c[..m * n]).expect("c holds rows × cols elements");
    general_mat_mul(T::one(), &a.view(), &b.view(), beta, &mut out);
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
/// what the `busy_f32` kernel computes for each element, from that element's start.
pub fn busy_from(mut x: f32, iterations: u64) -> f32 {
    for _ in 0..iterations {
        x = x.mul_add(0.999_999, 1e-6);
    }
    std::hint::black_box(x)
}

/// Busy-loop iterations that take about `ms` milliseconds on this CPU, from one probe.
pub fn busy_iterations_for_ms(ms: f64) -> u64 {
    let probe = 2_000_000u64;
    let start = std::time::Instant::now();
    busy(probe);
    let per_iteration_ms = start.elapsed().as_secs_f64() * 1e3 / probe as f64;
    (ms / per_iteration_ms.max(1e-9)).max(1.0) as u64
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
        assert!(busy_iterations_for_ms(1.0) >= 1);
    }
}

//! CPU building blocks for the CPU backend (and the CPU side of comparisons): a
//! multithreaded SGEMM from the `matrixmultiply` crate and a calibrated busy loop.

/// `c = a · b` for square row-major `n × n` matrices.
pub fn sgemm(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    assert!(
        a.len() >= n * n && b.len() >= n * n && c.len() >= n * n,
        "matrices smaller than n × n"
    );
    let s = n as isize;
    // SAFETY: the assert above guarantees each buffer holds n × n floats, the strides
    // (row stride n, column stride 1) stay inside them, and `c` does not alias `a` or
    // `b` because it is a distinct `&mut` borrow.
    unsafe {
        matrixmultiply::sgemm(
            n,
            n,
            n,
            1.0,
            a.as_ptr(),
            s,
            1,
            b.as_ptr(),
            s,
            1,
            0.0,
            c.as_mut_ptr(),
            s,
            1,
        );
    }
}

/// `c = a · b` in double precision for square row-major `n × n` matrices: the
/// reference the precision shoot-out measures every other format against.
pub fn dgemm(n: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    assert!(
        a.len() >= n * n && b.len() >= n * n && c.len() >= n * n,
        "matrices smaller than n × n"
    );
    let s = n as isize;
    // SAFETY: as in `sgemm`: each buffer holds n × n values, the row-major strides stay
    // inside them, and `c` is a distinct `&mut` borrow.
    unsafe {
        matrixmultiply::dgemm(
            n,
            n,
            n,
            1.0,
            a.as_ptr(),
            s,
            1,
            b.as_ptr(),
            s,
            1,
            0.0,
            c.as_mut_ptr(),
            s,
            1,
        );
    }
}

/// A row-major matrix view for [`gemm`]: `rows × cols`, optionally read transposed.
#[derive(Clone, Copy)]
pub struct Mat<'a> {
    /// Row-major data, at least rows × cols long.
    pub data: &'a [f32],
    /// Rows as stored.
    pub rows: usize,
    /// Columns as stored.
    pub cols: usize,
    /// Use the transpose.
    pub t: bool,
}

impl<'a> Mat<'a> {
    /// A stored `rows × cols` matrix.
    pub fn new(data: &'a [f32], rows: usize, cols: usize) -> Self {
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

    fn shape(&self) -> (usize, usize) {
        if self.t {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        }
    }

    fn strides(&self) -> (isize, isize) {
        let (r, c) = (self.cols as isize, 1);
        if self.t { (c, r) } else { (r, c) }
    }
}

/// `c = a · b + beta · c` for row-major `c` of shape (rows of a) × (cols of b).
pub fn gemm(a: Mat<'_>, b: Mat<'_>, beta: f32, c: &mut [f32]) {
    let ((m, k), (k2, n)) = (a.shape(), b.shape());
    assert_eq!(k, k2, "inner dimensions differ");
    assert!(
        a.data.len() >= a.rows * a.cols && b.data.len() >= b.rows * b.cols && c.len() >= m * n,
        "buffers smaller than their shapes"
    );
    let ((rsa, csa), (rsb, csb)) = (a.strides(), b.strides());
    // SAFETY: the asserts guarantee each buffer covers its shape; the strides describe
    // row-major storage of those shapes (swapped for a transpose), so every index
    // matrixmultiply forms stays inside; `c` is a distinct `&mut` and cannot alias.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.data.as_ptr(),
            rsa,
            csa,
            b.data.as_ptr(),
            rsb,
            csb,
            beta,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

/// `iterations` dependent fused multiply-adds: a fixed amount of CPU work that the
/// optimiser cannot remove.
pub fn busy(iterations: u64) -> f32 {
    let mut x = std::hint::black_box(0.5f32);
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
    fn gemm_handles_transposes() {
        // a: 2×3, b: 2×3; a · bᵀ is 2×2.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        let mut c = [0.0; 4];
        gemm(Mat::new(&a, 2, 3), Mat::new(&b, 2, 3).t(), 0.0, &mut c);
        assert_eq!(c, [4.0, 2.0, 10.0, 5.0]);
        let mut d = [0.0; 9];
        gemm(Mat::new(&a, 2, 3).t(), Mat::new(&b, 2, 3), 0.0, &mut d);
        assert_eq!(d, [1.0, 4.0, 1.0, 2.0, 5.0, 2.0, 3.0, 6.0, 3.0]);
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

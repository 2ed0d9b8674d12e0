//! How a CPU product uses the cores. Below a size measured on this machine, at first
//! use, a product runs on the calling thread; from that size on, C's rows (its columns,
//! when C is wider than tall) are cut into one block per core and each block is a
//! single-threaded faer product: the calling thread takes the first, `handoff`'s
//! helper threads the others.
//!
//! Why our own split rather than faer's `Par::rayon`: on the project's 2-core VM
//! (tests/gpu/README.md) faer's single-threaded kernels ran at 0.97–1.09× the speed of
//! OpenBLAS on one thread from n = 128 to 1024, so the gap to numpy (0.5–0.9×) was all
//! in the threading: faer's parallel path kept n = 512 on one thread and reached
//! 0.75–0.89× at n = 1024–2048, while two column blocks took 0.86 ms at n = 512 against
//! 1.47 ms on one thread, and 0.115 ms at n = 256 against 0.19 ms (best of 101 products
//! each, the VM busy with other builds; numpy took 0.13–0.14 ms at n = 256).
//!
//! Why measured: handing work to a sleeping pool thread cost 3 µs at best and 6–20 µs
//! typically on the busy VM (`rayon::join` of two empty closures; `handoff` keeps
//! helpers awake between products for this reason), and whether a second core is
//! free depends on the machine and its neighbours; a fixed threshold that suits one VM
//! is wrong on another (issue 31). [`threading`] times one thread against every core at
//! a few sizes, the median of five products each (the typical product, not the lucky
//! one: small products such as the training step's must not pay a wake-up for
//! nothing), and takes the first size where every core is clearly faster.
//! When none is (a neighbour kept the other cores busy throughout), products from the
//! largest size tried use every core, and the measurement is tried again later, a few
//! times: a server outlives its neighbours' builds.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

use super::{Scalar, handoff};

/// Sizes tried by the calibration, smallest first; the largest is also the threshold
/// when no tried size ran faster on every core (the other core was busy throughout).
const CANDIDATES: &[usize] = &[64, 96, 128, 160, 192, 256, 320, 384, 512];
/// Products below the smallest size tried never use the pool, and never wait for the
/// calibration.
pub(crate) const SMALLEST_PARALLEL_FLOP: f64 = 2.0 * 64.0 * 64.0 * 64.0;
/// Every core must take less than this fraction of one thread's time to count as faster.
const CLEARLY_FASTER: f64 = 0.9;
/// Timed products per variant and size (their median counts).
const TRIES: usize = 5;
/// How long after an inconclusive measurement it is tried again, and how many times.
const RETRY_AFTER: Duration = Duration::from_secs(60);
const RETRIES: u32 = 3;
/// Row blocks are multiples of this many rows.
const BLOCK_ALIGN: usize = 16;

/// What the calibration found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threading {
    /// Cores used for large products.
    pub cores: usize,
    /// Square size n from which products use every core (compared as 2·n³ FLOP);
    /// `None` on one core.
    pub from_size: Option<usize>,
    /// Whether `from_size` was measured (false: no tried size won, so the largest tried).
    pub measured: bool,
}

impl Threading {
    /// FLOP (2·m·n·k) from which a product uses every core.
    pub fn from_flop(&self) -> f64 {
        self.from_size
            .map_or(f64::INFINITY, |n| 2.0 * (n as f64).powi(3))
    }

    /// How many blocks an m × k by k × n product is cut into.
    pub fn pieces(&self, m: usize, n: usize, k: usize) -> usize {
        let flop = 2.0 * m as f64 * n as f64 * k as f64;
        if flop >= self.from_flop() {
            self.cores
        } else {
            1
        }
    }
}

/// The threading of this machine, measured on first use (a few milliseconds, at most
/// about 30 on a 2-core VM) and again after [`RETRY_AFTER`] while inconclusive.
pub fn threading() -> Threading {
    /// The last measurement, when it was taken, and how many were taken.
    static LAST: Mutex<Option<(Threading, Instant, u32)>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    match *last {
        Some((threading, at, tries))
            if threading.measured || tries > RETRIES || at.elapsed() < RETRY_AFTER =>
        {
            threading
        }
        _ => {
            let threading = calibrate();
            let tries = last.map_or(1, |(_, _, tries)| tries + 1);
            *last = Some((threading, Instant::now(), tries));
            threading
        }
    }
}

fn calibrate() -> Threading {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if cores < 2 {
        return Threading {
            cores,
            from_size: None,
            measured: true,
        };
    }
    let started = Instant::now();
    let largest = *CANDIDATES.last().expect("sizes to try");
    let found = CANDIDATES.iter().copied().find(|&n| {
        let (a, b) = (
            super::random_matrix(n * n, 31),
            super::random_matrix(n * n, 32),
        );
        let mut c = vec![0.0f32; n * n];
        let mut median = |pieces: usize| {
            let mut times: Vec<f64> = (0..=TRIES)
                .map(|_| {
                    let start = Instant::now();
                    product(
                        MatMut::from_row_major_slice_mut(&mut c, n, n),
                        Accum::Replace,
                        MatRef::from_row_major_slice(&a, n, n),
                        MatRef::from_row_major_slice(&b, n, n),
                        pieces,
                    );
                    start.elapsed().as_secs_f64()
                })
                .skip(1) // the first is a warm-up
                .collect();
            times.sort_by(f64::total_cmp);
            times[times.len() / 2]
        };
        let one = median(1);
        let all = median(cores);
        tracing::trace!(
            n,
            one_s = one,
            every_core_s = all,
            "CPU GEMM threading tried"
        );
        all < CLEARLY_FASTER * one
    });
    let threading = Threading {
        cores,
        from_size: Some(found.unwrap_or(largest)),
        measured: found.is_some(),
    };
    tracing::debug!(
        ?threading,
        ms = started.elapsed().as_secs_f64() * 1e3,
        "CPU GEMM threading measured"
    );
    threading
}

/// `out = a · b` (or `out += a · b`), cut into `pieces` blocks of rows (of columns when
/// C is wider than tall) computed in parallel, each on one thread (fewer when the
/// blocks, [`BLOCK_ALIGN`]-row multiples, run out). The calling thread computes the
/// first block; `handoff` runs the rest.
pub(super) fn product<T: Scalar>(
    out: MatMut<'_, T>,
    accum: Accum,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    pieces: usize,
) {
    if out.nrows() < out.ncols() {
        // Cᵀ = Bᵀ · Aᵀ: C's columns are the rows of Cᵀ.
        return product(
            out.transpose_mut(),
            accum,
            b.transpose(),
            a.transpose(),
            pieces,
        );
    }
    let rows = out.nrows();
    let height = rows.div_ceil(pieces.max(1)).next_multiple_of(BLOCK_ALIGN);
    if pieces <= 1 || height >= rows {
        one_thread(out, accum, a, b);
        return;
    }
    // Row blocks, not column blocks: each block of a row-major C is one contiguous run,
    // so no cache line is written by two threads (column blocks shared one per row at
    // every boundary); at n = 256 row blocks took 0.11–0.12 ms against 0.12–0.13.
    let (first, mut rest) = out.split_at_row_mut(height);
    let (a_first, mut a_rest) = a.split_at_row(height);
    let team = handoff::Team::new(rest.nrows().div_ceil(height));
    handoff::pool().in_place_scope(|scope| {
        let team = &team;
        while rest.nrows() > 0 {
            let h = height.min(rest.nrows());
            let (block, tail) = rest.split_at_row_mut(h);
            let (a_block, a_tail) = a_rest.split_at_row(h);
            (rest, a_rest) = (tail, a_tail);
            scope.spawn(move |_| team.help(|| one_thread(block, accum, a_block, b)));
        }
        team.handed_off();
        one_thread(first, accum, a_first, b);
        team.wait_for_helpers();
    });
}

/// A single-threaded faer product, then the vector state cleaned for this thread.
fn one_thread<T: Scalar>(out: MatMut<'_, T>, accum: Accum, a: MatRef<'_, T>, b: MatRef<'_, T>) {
    matmul(out, accum, a, b, T::ONE, Par::Seq);
    super::clean_upper_vector_state();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_parallel_product_is_the_smallest_size_tried() {
        assert_eq!(SMALLEST_PARALLEL_FLOP, 2.0 * (CANDIDATES[0] as f64).powi(3));
    }

    #[test]
    fn the_threshold_is_measured_and_used_by_size() {
        let t = threading();
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(t.cores, cores);
        match t.from_size {
            None => assert_eq!(cores, 1),
            Some(n) => {
                assert!(CANDIDATES.contains(&n), "{t:?}");
                assert_eq!(t.pieces(n, n, n), cores);
                assert_eq!(t.pieces(n - 1, n, n), 1, "just below: one thread");
                assert_eq!(t.pieces(8, 8, 8), 1);
            }
        }
    }

    #[test]
    fn blocks_cover_every_row_and_column_once() {
        // Blocks are 16-row multiples, so some of these make fewer blocks than asked,
        // or one shorter; every row must still be written, once, right. The wide ones
        // are cut into blocks of columns.
        for (m, k, n, pieces) in [
            (40, 7, 5, 3),
            (100, 3, 9, 2),
            (17, 4, 4, 4),
            (1, 2, 3, 2),
            (5, 7, 40, 3),
            (9, 3, 100, 2),
            (4, 4, 17, 4),
        ] {
            let a = super::super::random_matrix(m * k, 1);
            let b = super::super::random_matrix(k * n, 2);
            let (mut one, mut many) = (vec![f32::NAN; m * n], vec![f32::NAN; m * n]);
            let run = |c: &mut [f32], pieces| {
                product(
                    MatMut::from_row_major_slice_mut(c, m, n),
                    Accum::Replace,
                    MatRef::from_row_major_slice(&a, m, k),
                    MatRef::from_row_major_slice(&b, k, n),
                    pieces,
                )
            };
            run(&mut one, 1);
            run(&mut many, pieces);
            let worst = one
                .iter()
                .zip(&many)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0f32, f32::max);
            // NaN (a row never written) fails this comparison too.
            assert!(worst <= 1e-5, "{m}×{k}×{n} in {pieces} blocks: {worst}");
        }
    }
}

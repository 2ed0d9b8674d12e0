//! What the emulation tests feed the kernels: the sizes, the launches each size runs
//! under, and seeded pseudo-random data from the project's own generator
//! (`cpu::random_matrix`), with the values that break careless code spliced in.

use cudarc::driver::LaunchConfig;
use gpulab::cpu::random_matrix;
use gpulab::gpu::launch::LaunchShape;

use super::emulator::Order;

/// Element counts: none, one, fewer than a warp, a prime past one 256-thread block,
/// exactly one of the launchers' 1024-thread blocks, one more (a second block with a
/// single live thread), and several blocks with a partial last one.
pub(super) const LENGTHS: [usize; 7] = [0, 1, 31, 257, 1024, 1025, 4099];

/// A grid far smaller than the data, 3 blocks of 64 threads: the grid-stride loops go
/// round up to 22 times at the largest length. The kernels promise correct results
/// for any grid, and the launchers never use one this small.
const SMALL_GRID: LaunchConfig = LaunchConfig {
    grid_dim: (3, 1, 1),
    block_dim: (64, 1, 1),
    shared_mem_bytes: 0,
};

/// The two launches every grid-stride case runs: the launcher's own configuration for
/// `shape` (so a change there is tested here), threads in ascending order; and
/// [`SMALL_GRID`], threads and blocks in descending order.
pub(super) fn launches(shape: LaunchShape) -> [(LaunchConfig, Order); 2] {
    let launcher = shape.config().unwrap_or_else(|e| panic!("{shape:?}: {e}"));
    [
        (launcher, Order::Ascending),
        (SMALL_GRID, Order::Descending),
    ]
}

/// `len` values in [-scale, scale), with every 8th replaced by +0 or −0 (where ReLU and
/// its gradient decide between "positive" and "not").
pub(super) fn values(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut v: Vec<f32> = random_matrix(len, seed)
        .into_iter()
        .map(|x| x * scale)
        .collect();
    for (k, x) in v.iter_mut().step_by(8).enumerate() {
        *x = if k % 2 == 0 { 0.0 } else { -0.0 };
    }
    v
}

/// `len` values in (0, scale]: losses, second moments.
pub(super) fn positive(len: usize, seed: u64, scale: f32) -> Vec<f32> {
    random_matrix(len, seed)
        .into_iter()
        .map(|x| (x.abs() + 1e-3) * scale)
        .collect()
}

/// `len` labels in `0..classes`.
pub(super) fn labels(len: usize, seed: u64, classes: usize) -> Vec<usize> {
    random_matrix(len, seed)
        .into_iter()
        .map(|x| (((x + 1.0) / 2.0 * classes as f32) as usize).min(classes - 1))
        .collect()
}

/// `len` floats for the conversion kernels: [`awkward`] first, then random bit patterns,
/// which cover every exponent, both signs, subnormals, infinities and NaNs.
pub(super) fn any_floats(len: usize, seed: u64) -> Vec<f32> {
    let halves = random_matrix(2 * len, seed);
    let half = |x: f32| ((x + 1.0) * 32768.0) as u32 & 0xffff;
    let random = halves
        .chunks_exact(2)
        .map(|pair| f32::from_bits(half(pair[0]) << 16 | half(pair[1])));
    awkward().into_iter().chain(random).take(len).collect()
}

/// Values where rounding to BF16 or FP16 goes wrong first.
fn awkward() -> Vec<f32> {
    let bits = f32::from_bits;
    vec![
        1.0,
        -2.5,
        // BF16 ties (the dropped half is exactly 0x8000): to even, down then up.
        bits(0x3f80_8000),
        bits(0x3f81_8000),
        bits(0xbf81_8000),
        // Either side of a tie.
        bits(0x3f80_7fff),
        bits(0x3f80_8001),
        // Largest finite FP32 (rounds up to infinity in BF16) and just below its tie.
        f32::MAX,
        f32::MIN,
        bits(0x7f7f_7fff),
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        bits(0x7f80_0001), // a signalling NaN, whose payload truncation would make infinity
        0.0,
        -0.0,
        // FP32 subnormals, smallest normal.
        bits(1),
        bits(0x8000_0001),
        bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        // FP16: largest finite, the tie to infinity and either side of it.
        65504.0,
        65519.996,
        65520.0,
        -65520.0,
        // FP16 subnormals: the smallest, the tie to zero at half of it, and just above.
        2f32.powi(-24),
        2f32.powi(-25),
        bits(0x3300_0001),
        2f32.powi(-14) * 0.999_9,
    ]
}

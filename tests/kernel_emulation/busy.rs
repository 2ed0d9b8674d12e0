//! `kernels/busy.cu` on the emulator against `cpu::busy_from`, the CPU busy loop:
//! bit-exact, since both run the same correctly rounded FMA the same number of times.

use gpulab::cpu::busy_from;
use gpulab::gpu::launch::LaunchShape;

use super::compare::assert_same;
use super::emulator::{Arg, launch};
use super::inputs::launches;

#[test]
fn busy_f32_runs_the_cpu_busy_loop_on_every_element() {
    // 2000 elements on 3 blocks of 256 threads: the grid-stride loop goes round 3 times.
    for (n, blocks, iterations) in [(1, 1, 1000), (257, 1, 1000), (2000, 3, 1000), (2000, 3, 0)] {
        // Element i starts from (i mod 1024) / 1000, as the kernel says.
        let want: Vec<f32> = (0..n)
            .map(|i| busy_from((i & 1023) as f32 * 1e-3, u64::from(iterations)))
            .collect();
        for (config, order) in launches(LaunchShape::Busy { blocks }) {
            let args = vec![
                Arg::F32s(vec![f32::NAN; n]),
                Arg::U64(n as u64),
                Arg::U32(iterations),
            ];
            let out = launch("busy_f32", config, order, args);
            let what = format!(
                "busy_f32, n = {n}, {iterations} iterations, grid {:?}, {order:?}",
                config.grid_dim
            );
            assert_same(&what, out[0].f32s(), &want);
        }
    }
}

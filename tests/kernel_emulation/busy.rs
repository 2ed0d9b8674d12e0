//! `kernels/busy.cu` on the emulator against `cpu::busy_from`, the CPU busy loop:
//! bit-exact, since both run the same correctly rounded FMA the same number of times.
//! Then the streams experiment's pipeline with the emulated kernel as its compute
//! step: its output check passes the right output and fails when a copy is lost or
//! lands in the wrong chunk.

use gpulab::cpu::busy_from;
use gpulab::experiments::streams::output::{check, fill_input};
use gpulab::gpu::launch::LaunchShape;

use super::compare::assert_same;
use super::emulator::{Arg, launch};
use super::inputs::{launches, values};

/// `busy_f32` on `data` with the launcher's grid for `blocks` blocks.
fn busy(data: Vec<f32>, iterations: u32, blocks: u32) -> Vec<f32> {
    let (config, order) = launches(LaunchShape::Busy { blocks })[0];
    let n = data.len() as u64;
    let args = vec![Arg::F32s(data), Arg::U64(n), Arg::U32(iterations)];
    launch("busy_f32", config, order, args)[0].f32s().to_vec()
}

#[test]
fn busy_f32_runs_the_cpu_busy_loop_on_every_element_from_its_value() {
    // 2000 elements on 3 blocks of 256 threads: the grid-stride loop goes round 3 times.
    for (n, blocks, iterations) in [(1, 1, 1000), (257, 1, 1000), (2000, 3, 1000), (2000, 3, 0)] {
        let start = values(n, 21, 100.0);
        let want: Vec<f32> = start
            .iter()
            .map(|&x| busy_from(x, u64::from(iterations)))
            .collect();
        for (config, order) in launches(LaunchShape::Busy { blocks }) {
            let args = vec![
                Arg::F32s(start.clone()),
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

/// The streams pipeline with the emulated kernel: chunk `c`'s device buffer receives
/// `copied_in(c)` (the input's chunk when the copy worked), the kernel transforms it,
/// and the result is copied out.
fn pipeline(
    input: &[f32],
    per_chunk: usize,
    iterations: u32,
    copied_in: impl Fn(usize) -> Vec<f32>,
) -> Vec<f32> {
    let mut output = vec![f32::NAN; input.len()];
    for (c, out) in output.chunks_mut(per_chunk).enumerate() {
        out.copy_from_slice(&busy(copied_in(c), iterations, 2));
    }
    output
}

#[test]
fn the_streams_output_check_catches_a_lost_or_misordered_copy_on_the_emulated_kernel() {
    let (per_chunk, chunks, iterations) = (300, 3, 50);
    let mut input = vec![0.0; per_chunk * chunks];
    fill_input(&mut input);
    let chunk = |c: usize| input[c * per_chunk..(c + 1) * per_chunk].to_vec();
    let right = pipeline(&input, per_chunk, iterations, chunk);
    assert_eq!(
        check(&input, &right, per_chunk, u64::from(iterations)),
        Ok(())
    );
    // The copy into chunk 1's buffer was lost: the kernel ran on its zeros.
    let lost = pipeline(&input, per_chunk, iterations, |c| {
        if c == 1 {
            vec![0.0; per_chunk]
        } else {
            chunk(c)
        }
    });
    let error = check(&input, &lost, per_chunk, u64::from(iterations)).unwrap_err();
    assert!(error.starts_with("chunk 1"), "{error}");
    // Chunk 2's buffer still held the last run's output (the kernel ran before the copy).
    let stale = pipeline(&input, per_chunk, iterations, |c| {
        if c == 2 {
            right[2 * per_chunk..].to_vec()
        } else {
            chunk(c)
        }
    });
    let error = check(&input, &stale, per_chunk, u64::from(iterations)).unwrap_err();
    assert!(error.starts_with("chunk 2"), "{error}");
    // Chunks 0 and 1 copied into each other's buffers.
    let swapped = pipeline(&input, per_chunk, iterations, |c| chunk([1, 0, 2][c]));
    let error = check(&input, &swapped, per_chunk, u64::from(iterations)).unwrap_err();
    assert!(error.starts_with("chunk 0"), "{error}");
}

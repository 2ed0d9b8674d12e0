//! What the streams pipeline computes, and the check that a run computed it. Every
//! chunk is copied in, transformed in place by the busy kernel (each element runs
//! `iterations` steps of `x = fma(x, 0.999999, 1e-6)` from its own value, the loop
//! [`cpu::busy_from`] runs) and copied out, so the output depends on the input that
//! actually reached the device: a lost copy in (the kernel then transforms whatever
//! the buffer held: zeros, or last run's output, transformed twice), a chunk copied to
//! the wrong place, a kernel that ran before its copy finished, or a lost copy out
//! (the output buffer is filled with NaN before a checked run) all change it.
//!
//! The input is half-integers in [-2047.5, 2047.5], scrambled so that chunks differ at
//! the same offset. None is 1.0, the loop's fixed point, and at these magnitudes each
//! step moves a value by at least one unit in the last place, so transforming a value
//! once more always shows.

use crate::cpu;

/// Elements compared with the CPU's loop per chunk: the first, the last, and these
/// many more spread evenly between them. The CPU runs the loop only on these: at the
/// largest chunks a kernel runs ~10⁵ steps per element, and the whole output would take
/// it minutes. (The runs after the first are also compared with the first, in full.)
pub const SAMPLES_PER_CHUNK: usize = 14;

/// The input's element `i`.
pub fn input_value(i: usize) -> f32 {
    let scrambled = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52;
    scrambled as f32 - 2047.5
}

/// Fills `input` with the pipeline's input.
pub fn fill_input(input: &mut [f32]) {
    for (i, x) in input.iter_mut().enumerate() {
        *x = input_value(i);
    }
}

/// The offsets within a chunk of `len` elements that [`check`] compares.
fn sample_offsets(len: usize) -> impl Iterator<Item = usize> {
    let spread = SAMPLES_PER_CHUNK + 1;
    (0..=spread)
        .map(move |s| (len.saturating_sub(1) * s) / spread)
        .filter(move |_| len > 0)
}

/// Whether `output` is `input` with every element run `iterations` times through the
/// busy loop, chunk by chunk (`per_chunk` elements each), on [`SAMPLES_PER_CHUNK`] + 2
/// elements per chunk; `Err` names the first element that differs.
pub fn check(
    input: &[f32],
    output: &[f32],
    per_chunk: usize,
    iterations: u64,
) -> Result<(), String> {
    if input.len() != output.len() {
        return Err(format!(
            "the output holds {} elements, the input {}",
            output.len(),
            input.len()
        ));
    }
    for (chunk, start) in (0..input.len()).step_by(per_chunk.max(1)).enumerate() {
        let len = per_chunk.min(input.len() - start);
        for offset in sample_offsets(len) {
            let i = start + offset;
            let want = cpu::busy_from(input[i], iterations);
            if output[i].to_bits() != want.to_bits() {
                return Err(format!(
                    "chunk {chunk}, element {offset}: {} where the input {} after {iterations} steps gives {want}",
                    output[i], input[i]
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline(input: &[f32], per_chunk: usize, iterations: u64) -> Vec<f32> {
        let mut out = input.to_vec();
        for x in out.chunks_mut(per_chunk).flatten() {
            *x = cpu::busy_from(*x, iterations);
        }
        out
    }

    #[test]
    fn the_check_passes_the_right_output_and_catches_lost_or_misplaced_copies() {
        let (per_chunk, chunks, iterations) = (1000, 4, 3);
        let mut input = vec![0.0; per_chunk * chunks];
        fill_input(&mut input);
        let right = pipeline(&input, per_chunk, iterations);
        assert_eq!(check(&input, &right, per_chunk, iterations), Ok(()));
        // A lost copy in: chunk 2's kernel ran on a zeroed buffer.
        let mut lost = right.clone();
        lost[2000..3000].copy_from_slice(&pipeline(&[0.0; 1000], per_chunk, iterations));
        assert!(
            check(&input, &lost, per_chunk, iterations)
                .unwrap_err()
                .contains("chunk 2")
        );
        // A stale buffer: chunk 1 still held last run's output, transformed again.
        let mut stale = right.clone();
        stale[1000..2000].copy_from_slice(&pipeline(&right[1000..2000], per_chunk, iterations));
        assert!(
            check(&input, &stale, per_chunk, iterations)
                .unwrap_err()
                .contains("chunk 1")
        );
        // Chunks 0 and 3 copied into each other's place.
        let mut swapped = right.clone();
        swapped[..1000].copy_from_slice(&right[3000..]);
        swapped[3000..].copy_from_slice(&right[..1000]);
        assert!(
            check(&input, &swapped, per_chunk, iterations)
                .unwrap_err()
                .contains("chunk 0")
        );
        // A lost copy out leaves the NaN the output was filled with.
        let mut unset = right.clone();
        unset[3999] = f32::NAN;
        assert!(check(&input, &unset, per_chunk, iterations).is_err());
        // The output of one step fewer is not the output.
        let short = pipeline(&input, per_chunk, iterations - 1);
        assert!(check(&input, &short, per_chunk, iterations).is_err());
    }

    #[test]
    fn every_input_value_moves_with_each_step() {
        let mut input = vec![0.0; 1 << 16];
        fill_input(&mut input);
        for &x in &input {
            assert!(x != 1.0 && x.abs() <= 2047.5 && x.fract().abs() == 0.5);
            assert_ne!(cpu::busy_from(x, 1), x, "{x}");
        }
        // Same offset, different chunks: different values.
        assert_ne!(input_value(5), input_value(5 + 1000));
        let offsets: Vec<usize> = sample_offsets(1000).collect();
        assert_eq!((offsets.len(), offsets[0], offsets[15]), (16, 0, 999));
    }
}

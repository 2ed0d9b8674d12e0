//! The training step's fused and two-stage kernels on the emulator: the bias add fused
//! with the ReLU (`bias_relu_*`), and the bias gradient in two stages — per-chunk
//! partial sums, fused with the ReLU's backward pass where there is one, then the
//! chunks added up (`column_sums_f32`). Bit-exact against the CPU's functions where
//! the kernel does the same operations in the same order: the ReLU and its gradient
//! (`ops::relu`, `ops::relu_backward`), and the chunked sum below, which is the order
//! the two stages add in; against `ops::column_sums` (row order) the totals differ
//! only by FP32 rounding, bounded here.

use gpulab::experiments::training::ops;
use gpulab::gpu::launch::{COLUMN_CHUNK_ROWS, LaunchShape, column_chunks};
use half::bf16;

use super::compare::{assert_same, assert_same_bf16};
use super::emulator::{Arg, launch};
use super::inputs::{launches, values};

/// Shapes around the chunk (32 rows) and the column blocks (128 and 32 threads).
const SHAPES: [(usize, usize); 7] = [
    (1, 1),
    (31, 3),
    (33, 3),
    (64, 3),
    (100, 257),
    (300, 33),
    (4099, 5),
];

/// Stage 1 as the kernels compute it: each chunk's column sums in row order.
fn chunk_sums(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut partial = vec![0.0f32; column_chunks(rows) * cols];
    for (k, chunk) in x[..rows * cols]
        .chunks(COLUMN_CHUNK_ROWS * cols)
        .enumerate()
    {
        for c in 0..cols {
            partial[k * cols + c] = chunk.iter().skip(c).step_by(cols).sum();
        }
    }
    partial
}

/// Stage 2 on the emulator: `column_sums_f32` over the partial sums.
fn add_chunks(partial: Vec<f32>, rows: usize, cols: usize) -> Vec<f32> {
    let chunks = column_chunks(rows);
    let (config, order) = launches(LaunchShape::ColumnSums { rows: chunks, cols })[0];
    let args = vec![
        Arg::F32s(partial),
        Arg::F32s(vec![f32::NAN; cols]),
        Arg::U64(chunks as u64),
        Arg::U64(cols as u64),
    ];
    launch("column_sums_f32", config, order, args)[1]
        .f32s()
        .to_vec()
}

#[test]
fn bias_relu_f32_is_the_cpu_bias_add_then_relu() {
    for (rows, cols) in SHAPES {
        let (z, bias) = (values(rows * cols, 21, 3.0), values(cols, 22, 1.0));
        let mut biased = z.clone();
        ops::add_bias(&mut biased, &bias);
        let want = ops::relu(&biased);
        for (config, order) in launches(LaunchShape::BiasRelu { rows, cols }) {
            let args = vec![
                Arg::F32s(z.clone()),
                Arg::F32s(bias.clone()),
                Arg::F32s(vec![f32::NAN; rows * cols]),
                Arg::U64(rows as u64),
                Arg::U64(cols as u64),
            ];
            let out = launch("bias_relu_f32", config, order, args);
            assert_same(
                &format!("bias_relu_f32, {rows} × {cols}, {order:?}"),
                out[2].f32s(),
                &want,
            );
        }
    }
}

#[test]
fn bias_relu_bf16_adds_in_fp32_and_rounds_once() {
    for (rows, cols) in SHAPES {
        let z: Vec<bf16> = values(rows * cols, 23, 3.0)
            .into_iter()
            .map(bf16::from_f32)
            .collect();
        let bias = values(cols, 24, 1.0);
        let want: Vec<bf16> = z
            .iter()
            .enumerate()
            .map(|(i, v)| bf16::from_f32((v.to_f32() + bias[i % cols]).max(0.0)))
            .collect();
        for (config, order) in launches(LaunchShape::BiasRelu { rows, cols }) {
            let args = vec![
                Arg::Bf16s(z.clone()),
                Arg::F32s(bias.clone()),
                Arg::Bf16s(vec![bf16::NAN; rows * cols]),
                Arg::U64(rows as u64),
                Arg::U64(cols as u64),
            ];
            let out = launch("bias_relu_bf16", config, order, args);
            assert_same_bf16(
                &format!("bias_relu_bf16, {rows} × {cols}, {order:?}"),
                out[2].bf16s(),
                &want,
            );
        }
    }
}

#[test]
fn the_two_stage_column_sum_adds_chunks_in_order_and_agrees_with_the_row_order_sum() {
    for (rows, cols) in SHAPES {
        let x = values(rows * cols, 25, 1.0);
        let want_partial = chunk_sums(&x, rows, cols);
        for (config, order) in launches(LaunchShape::ColumnChunks { rows, cols }) {
            let args = vec![
                Arg::F32s(x.clone()),
                Arg::F32s(vec![f32::NAN; column_chunks(rows) * cols]),
                Arg::U64(rows as u64),
                Arg::U64(cols as u64),
                Arg::U64(COLUMN_CHUNK_ROWS as u64),
            ];
            let out = launch("column_partial_sums_f32", config, order, args);
            let what = format!("column_partial_sums_f32, {rows} × {cols}, {order:?}");
            assert_same(&what, out[1].f32s(), &want_partial);
            let total = add_chunks(out[1].f32s().to_vec(), rows, cols);
            let row_order = ops::column_sums(&x, cols);
            if rows <= COLUMN_CHUNK_ROWS {
                assert_same(&what, &total, &row_order);
            }
            // The same values added in another order: each of the two sums is within
            // (rows − 1)·u·Σ|x| of the exact one (u = 2⁻²⁴, Higham's bound for
            // recursive summation), so they are within twice that of each other.
            for c in 0..cols {
                let magnitude: f64 = (0..rows).map(|r| f64::from(x[r * cols + c].abs())).sum();
                let bound = 2.0 * rows as f64 * f64::from(f32::EPSILON / 2.0) * magnitude;
                let gap = f64::from((total[c] - row_order[c]).abs());
                assert!(
                    gap <= bound,
                    "{what}: column {c} differs by {gap:e}, bound {bound:e}"
                );
            }
        }
    }
}

#[test]
fn relu_backward_partials_f32_is_the_relu_gradient_and_its_chunk_sums() {
    for (rows, cols) in SHAPES {
        let (a, da) = (
            ops::relu(&values(rows * cols, 26, 2.0)),
            values(rows * cols, 27, 1.0),
        );
        let want = ops::relu_backward(&a, &da);
        let want_partial = chunk_sums(&want, rows, cols);
        for (config, order) in launches(LaunchShape::PairChunks { rows, cols }) {
            let args = vec![
                Arg::F32s(a.clone()),
                Arg::F32s(da.clone()),
                Arg::F32s(vec![f32::NAN; rows * cols]),
                Arg::F32s(vec![f32::NAN; column_chunks(rows) * cols]),
                Arg::U64(rows as u64),
                Arg::U64(cols as u64),
                Arg::U64(COLUMN_CHUNK_ROWS as u64),
            ];
            let out = launch("relu_backward_partials_f32", config, order, args);
            let what = format!("relu_backward_partials_f32, {rows} × {cols}, {order:?}");
            assert_same(&format!("{what}: dz"), out[2].f32s(), &want);
            assert_same(
                &format!("{what}: partial sums"),
                out[3].f32s(),
                &want_partial,
            );
        }
    }
}

#[test]
fn relu_backward_partials_bf16_masks_exactly_and_sums_in_fp32() {
    for (rows, cols) in SHAPES {
        let to_bf16 = |v: Vec<f32>| -> Vec<bf16> { v.into_iter().map(bf16::from_f32).collect() };
        let a = to_bf16(ops::relu(&values(rows * cols, 28, 2.0)));
        let da = to_bf16(values(rows * cols, 29, 1.0));
        let widen = |v: &[bf16]| -> Vec<f32> { v.iter().map(|x| x.to_f32()).collect() };
        // The gradient of a BF16 value masked is a BF16 value: the FP32 reference narrows exactly.
        let want32 = ops::relu_backward(&widen(&a), &widen(&da));
        let want: Vec<bf16> = want32.iter().copied().map(bf16::from_f32).collect();
        let want_partial = chunk_sums(&want32, rows, cols);
        for (config, order) in launches(LaunchShape::PairChunks { rows, cols }) {
            let args = vec![
                Arg::Bf16s(a.clone()),
                Arg::Bf16s(da.clone()),
                Arg::Bf16s(vec![bf16::NAN; rows * cols]),
                Arg::F32s(vec![f32::NAN; column_chunks(rows) * cols]),
                Arg::U64(rows as u64),
                Arg::U64(cols as u64),
                Arg::U64(COLUMN_CHUNK_ROWS as u64),
            ];
            let out = launch("relu_backward_partials_bf16", config, order, args);
            let what = format!("relu_backward_partials_bf16, {rows} × {cols}, {order:?}");
            assert_same_bf16(&format!("{what}: dz"), out[2].bf16s(), &want);
            assert_same(
                &format!("{what}: partial sums"),
                out[3].f32s(),
                &want_partial,
            );
        }
    }
}

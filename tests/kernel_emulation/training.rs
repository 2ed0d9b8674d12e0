//! `kernels/loss.cu`, `reduce.cu` and `optim.cu` on the emulator against the CPU
//! training step's functions (`experiments::training::ops`). Bit-exact where the kernel
//! performs the reference's operations in the reference's order: the softmax
//! cross-entropy (the same expf and logf, this host's libm, on the same values), the
//! column sums (row order in both), SGD and Adam. The batch-mean loss is the one
//! exception, with a bound derived below. Output buffers start as NaN.

use gpulab::experiments::training::ops;
use gpulab::gpu::launch::LaunchShape;

use super::compare::assert_same;
use super::emulator::{Arg, Order, launch};
use super::inputs::{LENGTHS, labels, launches, positive, values};

#[test]
fn softmax_xent_f32_is_the_cpu_loss_and_gradient() {
    // The training run's 3 classes at row counts around a block, plus other widths.
    for (rows, classes) in [(1, 3), (31, 3), (1025, 3), (257, 7), (40, 1)] {
        let (logits, bias) = (values(rows * classes, 11, 6.0), values(classes, 12, 1.0));
        let y = labels(rows, 13, classes);
        let (want_loss, want_grad) = ops::softmax_xent(&logits, &bias, &y);
        for (config, order) in launches(LaunchShape::SoftmaxXent { rows, classes }) {
            let args = vec![
                Arg::F32s(logits.clone()),
                Arg::F32s(bias.clone()),
                Arg::I32s(y.iter().map(|&label| label as i32).collect()),
                Arg::F32s(vec![f32::NAN; rows]),
                Arg::F32s(vec![f32::NAN; rows * classes]),
                Arg::U64(rows as u64),
                Arg::U64(classes as u64),
            ];
            let out = launch("softmax_xent_f32", config, order, args);
            let what = format!("softmax_xent_f32, {rows} × {classes}, {order:?}");
            assert_same(&format!("{what}: loss"), out[3].f32s(), &want_loss);
            assert_same(&format!("{what}: gradient"), out[4].f32s(), &want_grad);
        }
    }
}

#[test]
fn column_sums_f32_is_the_cpu_bias_gradient() {
    for (rows, cols) in [(0, 5), (1, 1), (64, 3), (3, 1025), (300, 33)] {
        let x = values(rows * cols, 14, 1.0);
        let want = ops::column_sums(&x, cols);
        for (config, order) in launches(LaunchShape::ColumnSums { rows, cols }) {
            let args = vec![
                Arg::F32s(x.clone()),
                Arg::F32s(vec![f32::NAN; cols]),
                Arg::U64(rows as u64),
                Arg::U64(cols as u64),
            ];
            let out = launch("column_sums_f32", config, order, args);
            let what = format!("column_sums_f32, {rows} × {cols}, {order:?}");
            assert_same(&what, out[1].f32s(), &want);
        }
    }
}

/// The batch-mean loss. The CPU reference sums in `f64`; the kernel sums in FP32, each
/// of its 256 threads over a strided slice of ⌈n/256⌉ values and then in an 8-level
/// tree, and multiplies by `1/n` rounded to FP32. Each value therefore passes through
/// at most m = ⌈n/256⌉ − 1 + 8 rounded additions, and for positive values (losses are)
/// the FP32 sum is within γ_m ≈ m·u of the exact one, u = 2⁻²⁴. Rounding `1/n`, the
/// product, and the reference's own final rounding to FP32 add 3u: a bound of
/// (m + 3)·u relative, widened by 1% for γ's denominator and the f64 sum's error.
/// Ascending and descending thread orders must agree bit for bit (no race).
#[test]
fn scaled_sum_f32_is_the_cpu_mean_loss_within_its_rounding_bound() {
    for n in [1, 31, 256, 257, 1000, 4099] {
        let losses = positive(n, 15, 3.0);
        let want = ops::mean_loss(&losses);
        let rounded_additions = n.div_ceil(256) - 1 + 8;
        let bound = (rounded_additions + 3) as f32 * (f32::EPSILON / 2.0) * 1.01 * want;
        let config = LaunchShape::ScaledSum { n }.config().expect("one block");
        let sums = [Order::Ascending, Order::Descending].map(|order| {
            let args = vec![
                Arg::F32s(losses.clone()),
                Arg::F32s(vec![f32::NAN]),
                Arg::U64(n as u64),
                Arg::F32(1.0 / n as f32),
            ];
            launch("scaled_sum_f32", config, order, args)[1].f32s()[0]
        });
        assert_eq!(
            sums[0].to_bits(),
            sums[1].to_bits(),
            "scaled_sum_f32, n = {n}: the thread order changed the result"
        );
        assert!(
            (sums[0] - want).abs() <= bound,
            "scaled_sum_f32, n = {n}: kernel {} vs reference {want}, bound {bound:e}",
            sums[0]
        );
    }
}

#[test]
fn sgd_f32_is_the_cpu_update() {
    for n in LENGTHS {
        let (p, g, lr) = (values(n, 16, 1.0), values(n, 17, 0.5), 0.1);
        let mut want = p.clone();
        ops::sgd_update(&mut want, &g, lr);
        for (config, order) in launches(LaunchShape::Elementwise { n }) {
            let args = vec![
                Arg::F32s(p.clone()),
                Arg::F32s(g.clone()),
                Arg::F32(lr),
                Arg::U64(n as u64),
            ];
            let out = launch("sgd_f32", config, order, args);
            assert_same(
                &format!("sgd_f32, n = {n}, {order:?}"),
                out[0].f32s(),
                &want,
            );
        }
    }
}

#[test]
fn adam_f32_is_the_cpu_update() {
    // Step 1 (the largest bias correction) and a later step, on moments already moving.
    for (n, t) in LENGTHS.into_iter().flat_map(|n| [(n, 1), (n, 10)]) {
        let (p, g) = (values(n, 18, 1.0), values(n, 19, 0.1));
        let (m, v) = (values(n, 20, 0.01), positive(n, 21, 1e-3));
        let step = ops::adam_step(3e-3, t);
        let (mut want_p, mut want_m, mut want_v) = (p.clone(), m.clone(), v.clone());
        ops::adam_update(&mut want_p, &g, &mut want_m, &mut want_v, step);
        for (config, order) in launches(LaunchShape::Elementwise { n }) {
            let mut args = vec![
                Arg::F32s(p.clone()),
                Arg::F32s(g.clone()),
                Arg::F32s(m.clone()),
                Arg::F32s(v.clone()),
            ];
            let (lr, b1, b2, eps, c1, c2) =
                (step.lr, step.beta1, step.beta2, step.eps, step.c1, step.c2);
            args.extend([lr, b1, b2, eps, c1, c2].map(Arg::F32));
            args.push(Arg::U64(n as u64));
            let out = launch("adam_f32", config, order, args);
            let what = format!("adam_f32, n = {n}, step {t}, {order:?}");
            assert_same(&format!("{what}: p"), out[0].f32s(), &want_p);
            assert_same(&format!("{what}: m"), out[2].f32s(), &want_m);
            assert_same(&format!("{what}: v"), out[3].f32s(), &want_v);
        }
    }
}

//! The CPU training step as [`super::model`] takes it: the forward and backward pass
//! computed into buffers kept from step to step ([`Workspace`]), with everything
//! between the two large products done in one pass over each row of the hidden layer.
//!
//! The math is the reference's, from [`super::ops`]: bias, ReLU, logits, softmax
//! cross-entropy (`ops::softmax_xent_row` itself), the gradients of W2 and b2, the
//! gradient through ReLU (where the activation is positive) and b1's gradient summed
//! over rows in row order, as `ops::column_sums` does (the GPU sums chunks of 32 rows,
//! then the chunks: the same values, added in another order). Under mixed precision
//! the values the GPU stores in BF16 are rounded to BF16 here at the same points: the
//! first product's output, the activation, the logits' gradient where the backward
//! products read it, and the gradient reaching the hidden layer. How the work is arranged differs, and with it the order of the sums inside
//! the products (the logits keep one partial sum per vector lane), so a step agrees
//! with the op-by-op one to rounding, not bit for bit (the test below bounds the gap):
//!
//! - Products with three columns (the logits, the gradient of W2, the gradient reaching
//!   the hidden layer) are three dot products or three multiply-adds per hidden unit,
//!   written here, not sent through the general GEMM, which packs its operands for
//!   shapes that need it.
//! - One row of the hidden layer (4 KiB at hidden 1024) stays in L1 from its bias to
//!   its gradient; the pre-activation buffer is overwritten by its own gradient, so the
//!   step writes one batch × hidden buffer instead of four (five under BF16).
//! - Nothing is allocated per step: a fresh 1 MiB buffer is fresh pages, and the page
//!   faults were the largest single cost of the step written op by op (`perf` on the
//!   2-core VM, batch 256 / hidden 1024).
//! - The row pass runs under the best vector instructions this CPU has (pulp checks
//!   them at run time, safely); the dot products keep one partial sum per vector lane.

use half::bf16;

use super::mlp::{CLASSES, FEATURES, Mlp};
use super::ops;
use crate::cpu::{Mat, gemm};

/// Partial sums per dot product: two AVX2 vectors (one AVX-512 vector) of f32.
const LANES: usize = 16;

/// The buffers of one training step, reused from step to step (and resized, without
/// reallocating, when the batch or the width changes).
#[derive(Debug, Default)]
pub struct Workspace {
    /// The batch's inputs (rounded to BF16 under mixed precision), batch × FEATURES.
    x: Vec<f32>,
    /// W1 rounded to BF16 (mixed precision only).
    w1: Vec<f32>,
    /// W2 transposed, CLASSES × hidden (rounded to BF16 under mixed precision).
    w2t: Vec<f32>,
    /// batch × hidden: the pre-activation, then, row by row, its gradient.
    hidden: Vec<f32>,
    /// One row of activations.
    act: Vec<f32>,
    /// The gradient of W2, transposed like `w2t`.
    dw2t: Vec<f32>,
    /// Each row's loss.
    losses: Vec<f32>,
    /// Gradients in [`Mlp::tensors_mut`] order.
    grads: [Vec<f32>; 4],
}

impl Workspace {
    /// The gradients of the last [`Workspace::loss_and_grads`], in
    /// [`Mlp::tensors_mut`] order.
    pub fn grads(&self) -> &[Vec<f32>; 4] {
        &self.grads
    }

    /// The gradients, giving the workspace up.
    pub fn into_grads(self) -> [Vec<f32>; 4] {
        self.grads
    }

    /// The batch-mean loss of `model` on inputs `x` (batch × FEATURES) with labels `y`,
    /// and its gradients (read them with [`Workspace::grads`]).
    pub fn loss_and_grads(&mut self, model: &Mlp, x: &[f32], y: &[usize], bf16_ops: bool) -> f32 {
        let (b, h) = (y.len(), model.hidden);
        let round = |v: f32| if bf16_ops { round_bf16(v) } else { v };
        self.x.clear();
        self.x.extend(x[..b * FEATURES].iter().map(|&v| round(v)));
        if bf16_ops {
            self.w1.clear();
            self.w1.extend(model.w1.iter().map(|&v| round_bf16(v)));
        }
        self.w2t.resize(CLASSES * h, 0.0);
        for (j, w) in model.w2.chunks_exact(CLASSES).enumerate() {
            for (c, &w) in w.iter().enumerate() {
                self.w2t[c * h + j] = round(w);
            }
        }
        let w1 = if bf16_ops { &self.w1 } else { &model.w1 };
        self.hidden.resize(b * h, 0.0);
        gemm(
            Mat::new(&self.x, b, FEATURES),
            Mat::new(w1, FEATURES, h),
            0.0,
            &mut self.hidden,
        );
        self.act.resize(h, 0.0);
        self.dw2t.clear();
        self.dw2t.resize(CLASSES * h, 0.0);
        self.losses.resize(b, 0.0);
        let [dw1, db1, dw2, db2] = &mut self.grads;
        db1.clear();
        db1.resize(h, 0.0);
        db2.clear();
        db2.resize(CLASSES, 0.0);
        let pass = RowPass {
            hidden: &mut self.hidden,
            act: &mut self.act,
            b1: &model.b1,
            b2: &model.b2,
            w2t: &self.w2t,
            labels: y,
            bf16_ops,
            losses: &mut self.losses,
            dw2t: &mut self.dw2t,
            db1,
            db2,
        };
        pulp::Arch::new().dispatch(pass);
        dw2.resize(h * CLASSES, 0.0);
        for (j, w) in dw2.chunks_exact_mut(CLASSES).enumerate() {
            for (c, w) in w.iter_mut().enumerate() {
                *w = self.dw2t[c * h + j];
            }
        }
        dw1.resize(FEATURES * h, 0.0);
        gemm(
            Mat::new(&self.x, b, FEATURES).t(),
            Mat::new(&self.hidden, b, h),
            0.0,
            dw1,
        );
        ops::mean_loss(&self.losses)
    }
}

/// `v` rounded to BF16 and widened back, as `ops::round_bf16` does for a slice.
fn round_bf16(v: f32) -> f32 {
    bf16::from_f32(v).to_f32()
}

/// Everything between the two large products, row by row of the hidden layer.
struct RowPass<'a> {
    /// batch × hidden pre-activations (without b1), overwritten by their gradient.
    hidden: &'a mut [f32],
    /// One row of activations (scratch).
    act: &'a mut [f32],
    b1: &'a [f32],
    b2: &'a [f32],
    /// W2 transposed, CLASSES × hidden.
    w2t: &'a [f32],
    labels: &'a [usize],
    bf16_ops: bool,
    losses: &'a mut [f32],
    /// Accumulated: the gradient of W2 (transposed), of b1 and of b2.
    dw2t: &'a mut [f32],
    db1: &'a mut [f32],
    db2: &'a mut [f32],
}

impl pulp::WithSimd for RowPass<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let h = self.b1.len();
        let rows = self.labels.len();
        let act = &mut self.act[..h];
        let b1 = &self.b1[..h];
        let (w0, w12) = self.w2t.split_at(h);
        let (w1, w2) = w12.split_at(h);
        let w2 = &w2[..h];
        let (d0, d12) = self.dw2t.split_at_mut(h);
        let (d1, d2) = d12.split_at_mut(h);
        let d2 = &mut d2[..h];
        let db1 = &mut self.db1[..h];
        for (r, z) in self.hidden.chunks_exact_mut(h).enumerate().take(rows) {
            // Forward: bias, ReLU. Under mixed precision the product's output and the
            // activation are BF16, as the GPU stores them (`bias_relu_bf16`).
            let round = |v: f32| if self.bf16_ops { round_bf16(v) } else { v };
            for ((z, b), a) in z.iter().zip(b1).zip(act.iter_mut()) {
                *a = round((round(*z) + *b).max(0.0));
            }
            let logits = [dot(act, w0), dot(act, w1), dot(act, w2)];
            let mut g = [0.0f32; CLASSES];
            self.losses[r] = ops::softmax_xent_row(&logits, self.b2, self.labels[r], rows, &mut g);
            for (db, g) in self.db2.iter_mut().zip(g) {
                *db += g;
            }
            // Backward (the logits' gradient in BF16 under mixed precision, as the GPU
            // casts it for its BF16 products): W2's gradient, then the gradient through
            // the ReLU, where the activation is positive, and b1's.
            let g = g.map(round);
            for j in 0..h {
                let a = act[j];
                d0[j] += a * g[0];
                d1[j] += a * g[1];
                d2[j] += a * g[2];
                let da = round(g[0] * w0[j] + g[1] * w1[j] + g[2] * w2[j]);
                let dz = if a > 0.0 { da } else { 0.0 };
                z[j] = dz;
                db1[j] += dz;
            }
        }
    }
}

/// `a · b` over equal lengths, with one partial sum per lane so it vectorises.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a_lanes, a_rest) = a.as_chunks::<LANES>();
    let (b_lanes, b_rest) = b[..a.len()].as_chunks::<LANES>();
    let mut acc = [0.0f32; LANES];
    for (a, b) in a_lanes.iter().zip(b_lanes) {
        for l in 0..LANES {
            acc[l] += a[l] * b[l];
        }
    }
    let rest: f32 = a_rest.iter().zip(b_rest).map(|(a, b)| a * b).sum();
    acc.iter().sum::<f32>() + rest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::training::model::Tickets;

    /// The reference step written op by op, with fresh buffers (what the run did
    /// before [`Workspace`]).
    fn op_by_op(model: &Mlp, x: &[f32], y: &[usize], bf16_ops: bool) -> (f32, [Vec<f32>; 4]) {
        let (b, h) = (y.len(), model.hidden);
        let cast = |v: &[f32]| {
            if bf16_ops {
                ops::round_bf16(v)
            } else {
                v.to_vec()
            }
        };
        let (x, w1, w2) = (cast(x), cast(&model.w1), cast(&model.w2));
        let mut z1 = vec![0.0; b * h];
        gemm(
            Mat::new(&x, b, FEATURES),
            Mat::new(&w1, FEATURES, h),
            0.0,
            &mut z1,
        );
        let mut z1 = cast(&z1);
        ops::add_bias(&mut z1, &model.b1);
        let a1 = cast(&ops::relu(&z1));
        let mut z2 = vec![0.0; b * CLASSES];
        gemm(Mat::new(&a1, b, h), Mat::new(&w2, h, CLASSES), 0.0, &mut z2);
        let (losses, dz2) = ops::softmax_xent(&z2, &model.b2, y);
        let db2 = ops::column_sums(&dz2, CLASSES);
        let dz2 = cast(&dz2);
        let mut dw2 = vec![0.0; h * CLASSES];
        gemm(
            Mat::new(&a1, b, h).t(),
            Mat::new(&dz2, b, CLASSES),
            0.0,
            &mut dw2,
        );
        let mut da1 = vec![0.0; b * h];
        gemm(
            Mat::new(&dz2, b, CLASSES),
            Mat::new(&w2, h, CLASSES).t(),
            0.0,
            &mut da1,
        );
        let dz1 = ops::relu_backward(&a1, &cast(&da1));
        let mut dw1 = vec![0.0; FEATURES * h];
        gemm(
            Mat::new(&x, b, FEATURES).t(),
            Mat::new(&dz1, b, h),
            0.0,
            &mut dw1,
        );
        let db1 = ops::column_sums(&dz1, h);
        (ops::mean_loss(&losses), [dw1, db1, dw2, db2])
    }

    #[test]
    fn the_fused_step_matches_the_step_written_op_by_op() {
        let data = Tickets::generate();
        let mut ws = Workspace::default();
        // Odd widths exercise the dot products' remainders; the workspace is reused
        // across shapes, as the labs' micro-batches reuse it.
        for (batch, hidden, bf16_ops) in [(64, 40, false), (7, 1024, true), (256, 37, false)] {
            let mut model = Mlp::init(hidden);
            model.b1.iter_mut().for_each(|b| *b -= 0.3); // some units inactive
            let (x, y) = data.batch(5, batch);
            let (want_loss, want) = op_by_op(&model, &x, &y, bf16_ops);
            let loss = ws.loss_and_grads(&model, &x, &y, bf16_ops);
            assert!(
                (loss - want_loss).abs() <= 1e-5,
                "{batch}/{hidden}: {loss} vs {want_loss}"
            );
            for (k, (got, want)) in ws.grads().iter().zip(&want).enumerate() {
                assert_eq!(got.len(), want.len(), "tensor {k}");
                let worst = got
                    .iter()
                    .zip(want)
                    .map(|(g, w)| (g - w).abs() / (1e-3 + w.abs()))
                    .fold(0.0f32, f32::max);
                assert!(
                    worst <= 1e-3,
                    "{batch}/{hidden}/{bf16_ops}: tensor {k} off by {worst}"
                );
            }
        }
    }
}

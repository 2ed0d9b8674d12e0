//! The training step's element-wise, loss, reduction and optimiser operations on the
//! CPU: one function per GPU kernel that does the same job (`kernels/elementwise.cu`,
//! `loss.cu`, `reduce.cu`, `optim.cu`), each naming its kernel. [`super::model`]
//! composes them into the reference forward and backward pass, and the CPU emulation
//! of the kernels (`tests/kernel_emulation`) compares every kernel with its function
//! here, so the GPU path and its reference cannot drift apart one operation at a time.
//!
//! Each function computes in the kernel's order of operations, so on the same inputs
//! the two agree bit for bit; where they cannot (the batch-mean loss), the doc says why.

use half::bf16;

use crate::gpu::AdamStep;

/// Adam's first-moment decay β1, for the CPU and GPU optimisers alike.
pub const ADAM_BETA1: f32 = 0.9;
/// Adam's second-moment decay β2.
pub const ADAM_BETA2: f32 = 0.999;
/// Added to Adam's denominator.
pub const ADAM_EPS: f32 = 1e-8;

/// `y[r, c] += bias[c]` for a row-major matrix with `bias.len()` columns
/// (`add_bias_f32`).
pub fn add_bias(y: &mut [f32], bias: &[f32]) {
    for row in y.chunks_mut(bias.len()) {
        row.iter_mut().zip(bias).for_each(|(y, b)| *y += b);
    }
}

/// `max(x, 0)` element by element (`relu_f32`).
pub fn relu(x: &[f32]) -> Vec<f32> {
    x.iter().map(|x| x.max(0.0)).collect()
}

/// The gradient through ReLU: `grad` where the forward input `x` was positive, else 0
/// (`relu_backward_f32`).
pub fn relu_backward(x: &[f32], grad: &[f32]) -> Vec<f32> {
    grad.iter()
        .zip(x)
        .map(|(g, x)| if *x > 0.0 { *g } else { 0.0 })
        .collect()
}

/// Each value rounded to BF16 (to nearest, ties to even) and widened back to FP32: what
/// a BF16 tensor holds (`round_bf16_f32`).
pub fn round_bf16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|x| bf16::from_f32(*x).to_f32()).collect()
}

/// Softmax cross-entropy of a row-major (rows, `bias.len()`) logit matrix plus `bias`,
/// one label per row, fused with its gradient (`softmax_xent_f32`). Returns each row's
/// loss, `logsumexp(z) − z[label]` with the row max subtracted for stability, and the
/// gradient of the batch-mean loss, `(softmax(z) − onehot(label)) / rows`.
pub fn softmax_xent(logits: &[f32], bias: &[f32], labels: &[usize]) -> (Vec<f32>, Vec<f32>) {
    let (rows, classes) = (labels.len(), bias.len());
    let mut grad = vec![0.0f32; rows * classes];
    let losses = labels
        .iter()
        .zip(logits.chunks(classes).zip(grad.chunks_mut(classes)))
        .map(|(&label, (z, g))| softmax_xent_row(z, bias, label, rows, g))
        .collect();
    (losses, grad)
}

/// One row of [`softmax_xent`]: the loss of logits `z` plus `bias` with label `label`,
/// and that row's gradient written to `grad` (the exponentials are kept there on the
/// way, so no row allocates).
pub fn softmax_xent_row(
    z: &[f32],
    bias: &[f32],
    label: usize,
    rows: usize,
    grad: &mut [f32],
) -> f32 {
    let logit = |c: usize| z[c] + bias[c];
    let max = (0..bias.len()).map(logit).fold(f32::NEG_INFINITY, f32::max);
    for (c, e) in grad.iter_mut().enumerate() {
        *e = (logit(c) - max).exp();
    }
    let sum: f32 = grad.iter().sum();
    for (c, g) in grad.iter_mut().enumerate() {
        let p = *g / sum;
        *g = (p - if c == label { 1.0 } else { 0.0 }) / rows as f32;
    }
    sum.ln() + max - logit(label)
}

/// The batch-mean loss: the per-row losses summed in `f64` and divided by their count.
/// `scaled_sum_f32` computes it as an FP32 tree reduction times `1/rows`, so the two
/// differ by the FP32 rounding of that reduction (the emulation test bounds it).
pub fn mean_loss(losses: &[f32]) -> f32 {
    let total: f64 = losses.iter().map(|&l| f64::from(l)).sum();
    (total / losses.len() as f64) as f32
}

/// Sum over rows of each column of a row-major matrix with `cols` columns, each in row
/// order (`column_sums_f32`): the bias gradients.
pub fn column_sums(x: &[f32], cols: usize) -> Vec<f32> {
    let rows = x.len() / cols;
    (0..cols)
        .map(|c| (0..rows).map(|r| x[r * cols + c]).sum())
        .collect()
}

/// Adam's hyper-parameters for step `t` (1-based) at learning rate `lr`, with the bias
/// corrections `1 − β^t` the update divides by.
pub fn adam_step(lr: f32, t: i32) -> AdamStep {
    AdamStep {
        lr,
        beta1: ADAM_BETA1,
        beta2: ADAM_BETA2,
        eps: ADAM_EPS,
        c1: 1.0 - ADAM_BETA1.powi(t),
        c2: 1.0 - ADAM_BETA2.powi(t),
    }
}

/// One Adam update of `p` with gradient `g`, moments `m` and `v` updated in place
/// (`adam_f32`).
#[inline(always)]
pub fn adam_update(p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32], s: AdamStep) {
    let n = p.len();
    let (g, m, v) = (&g[..n], &mut m[..n], &mut v[..n]);
    for i in 0..n {
        let g = g[i];
        m[i] = s.beta1 * m[i] + (1.0 - s.beta1) * g;
        v[i] = s.beta2 * v[i] + (1.0 - s.beta2) * g * g;
        p[i] -= s.lr * (m[i] / s.c1) / ((v[i] / s.c2).sqrt() + s.eps);
    }
}

/// One SGD update, `p −= lr · g` (`sgd_f32`).
#[inline(always)]
pub fn sgd_update(p: &mut [f32], g: &[f32], lr: f32) {
    p.iter_mut().zip(g).for_each(|(p, g)| *p -= lr * g);
}

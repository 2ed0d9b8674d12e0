//! The forward and backward pass of one training step on the GPU, written once for the
//! hidden layer's element type: FP32, or BF16 under mixed precision, where the hidden
//! layer's activations and their gradients are stored in BF16, as autocast stores a
//! BF16 Linear's output and the gradient flowing back into it (the weights, their
//! gradients, the logits and the loss stay FP32).
//!
//! Per step at batch B and width H the pass moves about 10 B·H elements through memory
//! (forward: the product writes z1, `bias_relu` reads it and writes a1, the logits'
//! product reads a1; backward: two products read a1 and write da1, the fused ReLU
//! backward reads a1 and da1 and writes dz1 with its bias gradient's partial sums, the
//! weight gradient's product reads dz1): 40 B·H bytes in FP32, 20 B·H in BF16. With 32
//! input features and 3 classes every product is thin, so the step is bound by those
//! bytes, not by arithmetic: BF16 storage halves them, which is where mixed precision
//! pays on this model (`roofline.rs` puts each kernel against this GPU's ceilings).

use super::model::{CLASSES, DATASET, FEATURES};
use super::profile::KernelMarks;
use crate::experiments::ExperimentError;
use crate::gpu::{
    Activation, Blas, BlasScalar, Compute, DeviceBuffer, Kernels, Operand, Output, Stream,
};

/// The hidden layer of one step: pre-activation, activation and their gradients.
pub(super) struct Hidden<T> {
    pub z1: DeviceBuffer<T>,
    pub a1: DeviceBuffer<T>,
    pub da1: DeviceBuffer<T>,
    pub dz1: DeviceBuffer<T>,
}

impl<T: BlasScalar> Hidden<T> {
    pub(super) fn zeros(s: &Stream, batch: usize, hidden: usize) -> Result<Self, ExperimentError> {
        let n = batch * hidden;
        Ok(Self {
            z1: s.zeros(n)?,
            a1: s.zeros(n)?,
            da1: s.zeros(n)?,
            dz1: s.zeros(n)?,
        })
    }
}

/// The output layer's side of a step, FP32 whatever the hidden layer's type: the
/// logits, each row's loss, the batch-mean loss, the logits' gradient, and stage 1 of
/// a bias gradient (one partial sum per chunk of rows and column, b2's then b1's).
pub(super) struct Head {
    pub z2: DeviceBuffer<f32>,
    pub dz2: DeviceBuffer<f32>,
    pub losses: DeviceBuffer<f32>,
    pub loss: DeviceBuffer<f32>,
    pub partials: DeviceBuffer<f32>,
}

/// What one pass reads, in the pass's element type: the tickets (twice over, so any
/// batch window is contiguous), W1 and W2; b1 in FP32.
pub(super) struct Inputs<'a, T> {
    pub x: &'a DeviceBuffer<T>,
    pub w1: &'a DeviceBuffer<T>,
    pub w2: &'a DeviceBuffer<T>,
    pub b1: &'a DeviceBuffer<f32>,
}

/// Where the pass's work goes: the stream, our kernels, cuBLAS, the batch's first row,
/// the batch and the width, and the profile's marks (one after each launch) if any.
pub(super) struct Queue<'a> {
    pub s: &'a Stream,
    pub k: &'a Kernels,
    pub blas: &'a Blas,
    pub first: usize,
    pub b: usize,
    pub h: usize,
    pub marks: &'a mut Option<KernelMarks>,
}

impl Queue<'_> {
    pub(super) fn mark(&mut self, name: &'static str) -> Result<(), ExperimentError> {
        if let Some(marks) = self.marks.as_mut() {
            marks.after(self.s, name)?;
        }
        Ok(())
    }

    /// The batch's rows of the tickets.
    fn batch<'b, T>(&self, x: &'b DeviceBuffer<T>) -> Operand<'b, T> {
        Operand::new(x, 2 * DATASET, FEATURES).window(self.first, self.b)
    }
}

/// Forward through the hidden layer and the logits z2 = a1·W2 (FP32, without b2: the
/// softmax adds it), then the loss and the logits' gradient: the fused softmax
/// cross-entropy (each row's loss and dz2), the batch-mean loss, and b2's gradient
/// (`db2`) in two stages. `output` is b2, the labels and db2.
pub(super) fn forward<T: BlasScalar + Activation>(
    q: &mut Queue<'_>,
    input: &Inputs<'_, T>,
    hid: &mut Hidden<T>,
    head: &mut Head,
    (b2, labels, db2): (
        &DeviceBuffer<f32>,
        &DeviceBuffer<i32>,
        &mut DeviceBuffer<f32>,
    ),
) -> Result<(), ExperimentError> {
    hidden_layer(q, input, hid)?;
    let (b, h) = (q.b, q.h);
    q.blas.gemm(
        Operand::new(&hid.a1, b, h),
        Operand::new(input.w2, h, CLASSES),
        Output::new(&mut head.z2, b, CLASSES),
        Compute::F32,
    )?;
    q.mark("gemm z2 = a1·W2")?;
    let (first, s, k) = (q.first, q.s, q.k);
    k.softmax_xent(
        s,
        &head.z2,
        b2,
        labels,
        first,
        &mut head.losses,
        &mut head.dz2,
        b,
        CLASSES,
    )?;
    q.mark("softmax_xent loss, dz2")?;
    k.scaled_sum(s, &head.losses, &mut head.loss, b, 1.0 / b as f32)?;
    q.mark("scaled_sum mean loss")?;
    k.column_partials(s, &head.dz2, &mut head.partials, b, CLASSES)?;
    q.mark("column_partials db2")?;
    k.sum_partials(s, &head.partials, db2, b, CLASSES)?;
    q.mark("column_sums db2 = Σ partials")?;
    Ok(())
}

/// The hidden layer: z1 = x·W1, a1 = relu(z1 + b1) (what activation checkpointing
/// recomputes in the backward pass).
pub(super) fn hidden_layer<T: BlasScalar + Activation>(
    q: &mut Queue<'_>,
    input: &Inputs<'_, T>,
    hid: &mut Hidden<T>,
) -> Result<(), ExperimentError> {
    let (b, h) = (q.b, q.h);
    q.blas.gemm(
        q.batch(input.x),
        Operand::new(input.w1, FEATURES, h),
        Output::new(&mut hid.z1, b, h),
        Compute::F32,
    )?;
    q.mark("gemm z1 = x·W1")?;
    q.k.bias_relu(q.s, &hid.z1, input.b1, &mut hid.a1, b, h)?;
    q.mark("bias_relu a1 = relu(z1 + b1)")?;
    Ok(())
}

/// Backward from the logits' gradient `dz2` (in the pass's type): W2's gradient, the
/// gradient reaching the hidden layer, through the ReLU with stage 1 of b1's gradient
/// fused in, W1's gradient, then b1's from the partial sums. `grads` are W1, b1, W2.
pub(super) fn backward<T: BlasScalar + Activation>(
    q: &mut Queue<'_>,
    input: &Inputs<'_, T>,
    hid: &mut Hidden<T>,
    dz2: &DeviceBuffer<T>,
    grads: [&mut DeviceBuffer<f32>; 3],
    partials: &mut DeviceBuffer<f32>,
) -> Result<(), ExperimentError> {
    let (b, h) = (q.b, q.h);
    let [dw1, db1, dw2] = grads;
    q.blas.gemm(
        Operand::new(&hid.a1, b, h).t(),
        Operand::new(dz2, b, CLASSES),
        Output::new(dw2, h, CLASSES),
        Compute::F32,
    )?;
    q.mark("gemm dW2 = a1ᵀ·dz2")?;
    q.blas.gemm(
        Operand::new(dz2, b, CLASSES),
        Operand::new(input.w2, h, CLASSES).t(),
        Output::new(&mut hid.da1, b, h),
        Compute::F32,
    )?;
    q.mark("gemm da1 = dz2·W2ᵀ")?;
    q.k.relu_backward_partials(q.s, &hid.a1, &hid.da1, &mut hid.dz1, partials, b, h)?;
    q.mark("relu_backward_partials dz1, Σ chunks")?;
    q.blas.gemm(
        q.batch(input.x).t(),
        Operand::new(&hid.dz1, b, h),
        Output::new(dw1, FEATURES, h),
        Compute::F32,
    )?;
    q.mark("gemm dW1 = xᵀ·dz1")?;
    q.k.sum_partials(q.s, partials, db1, b, h)?;
    q.mark("column_sums db1 = Σ partials")?;
    Ok(())
}

//! The training step's fused and two-stage kernels: the bias add fused with the ReLU
//! (`bias_relu_*`), and the bias gradient as two stages — partial sums over chunks of
//! rows on a grid that fills the GPU, fused with the ReLU's backward pass where there
//! is one (`relu_backward_partials_*`, `column_partial_sums_f32`), then one thread per
//! column adding the chunks (`column_sums_f32`). `kernels/elementwise.cu` and
//! `kernels/reduce.cu` say why each is shaped so.

use cudarc::driver::{CudaFunction, DeviceRepr, PushKernelArg};
use half::bf16;

use super::shape::{COLUMN_CHUNK_ROWS, LaunchShape, column_chunks};
use super::{Kernels, need};
use crate::gpu::error::{DriverContext, GpuError};
use crate::gpu::stream::{DeviceBuffer, Stream};

/// An activation element type the fused kernels take — FP32, or BF16 under mixed
/// precision — with the kernel compiled for it.
pub trait Activation: DeviceRepr {
    /// `bias_relu_f32` or `bias_relu_bf16`.
    fn bias_relu(k: &Kernels) -> &CudaFunction;
    /// `relu_backward_partials_f32` or `relu_backward_partials_bf16`.
    fn relu_backward_partials(k: &Kernels) -> &CudaFunction;
}

impl Activation for f32 {
    fn bias_relu(k: &Kernels) -> &CudaFunction {
        &k.bias_relu
    }
    fn relu_backward_partials(k: &Kernels) -> &CudaFunction {
        &k.relu_backward_partials
    }
}

impl Activation for bf16 {
    fn bias_relu(k: &Kernels) -> &CudaFunction {
        &k.bias_relu_bf16
    }
    fn relu_backward_partials(k: &Kernels) -> &CudaFunction {
        &k.relu_backward_partials_bf16
    }
}

impl Kernels {
    /// `bias_relu_f32` / `bias_relu_bf16(const T* z, const float* bias, T* a, u64 rows,
    /// u64 cols)`: a = max(z + bias, 0), row by row.
    pub fn bias_relu<T: Activation>(
        &self,
        stream: &Stream,
        z: &DeviceBuffer<T>,
        bias: &DeviceBuffer<f32>,
        a: &mut DeviceBuffer<T>,
        rows: usize,
        cols: usize,
    ) -> Result<(), GpuError> {
        need(z, rows * cols, "z")?;
        need(bias, cols, "bias")?;
        need(a, rows * cols, "a")?;
        let function = T::bias_relu(self);
        let config = LaunchShape::BiasRelu { rows, cols }.config()?;
        let (r, c) = (rows as u64, cols as u64);
        let mut launch = stream.raw().launch_builder(function);
        launch.arg(z).arg(bias).arg(a).arg(&r).arg(&c);
        // SAFETY: the function's element type is T's (`Activation` pairs each type with
        // its kernel); thread i reads z[i], bias[i % cols] and writes a[i] for
        // i < rows·cols, every extent checked above.
        unsafe { launch.launch(config) }.what("bias_relu failed to launch")?;
        Ok(())
    }

    /// Stage 1 of a column sum: `column_partial_sums_f32(x, partial, rows, cols,
    /// chunk_rows)`, one partial sum per chunk of [`COLUMN_CHUNK_ROWS`] rows and column,
    /// into `partial` (at least [`column_chunks`]`(rows) × cols` floats).
    pub fn column_partials(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<f32>,
        partial: &mut DeviceBuffer<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<(), GpuError> {
        need(x, rows * cols, "x")?;
        need(partial, column_chunks(rows) * cols, "partial")?;
        let config = LaunchShape::ColumnChunks { rows, cols }.config()?;
        let (r, c, k) = (rows as u64, cols as u64, COLUMN_CHUNK_ROWS as u64);
        let mut launch = stream.raw().launch_builder(&self.column_partials);
        launch.arg(x).arg(partial).arg(&r).arg(&c).arg(&k);
        // SAFETY: the thread for (chunk k, column c) reads x[r·cols + c] for the chunk's
        // rows r < rows and writes partial[k·cols + c] for k < column_chunks(rows);
        // both extents are checked above.
        unsafe { launch.launch(config) }.what("column_partial_sums_f32 failed to launch")?;
        Ok(())
    }

    /// The ReLU's backward pass with stage 1 of the bias gradient:
    /// `relu_backward_partials_f32` / `_bf16(a, da, dz, partial, rows, cols,
    /// chunk_rows)`: dz = da where a > 0, else 0, and the per-chunk column sums of dz.
    #[allow(clippy::too_many_arguments)]
    pub fn relu_backward_partials<T: Activation>(
        &self,
        stream: &Stream,
        a: &DeviceBuffer<T>,
        da: &DeviceBuffer<T>,
        dz: &mut DeviceBuffer<T>,
        partial: &mut DeviceBuffer<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<(), GpuError> {
        for (buffer, name) in [(a, "a"), (da, "da")] {
            need(buffer, rows * cols, name)?;
        }
        need(dz, rows * cols, "dz")?;
        need(partial, column_chunks(rows) * cols, "partial")?;
        let function = T::relu_backward_partials(self);
        let config = LaunchShape::PairChunks { rows, cols }.config()?;
        let (r, c, k) = (rows as u64, cols as u64, COLUMN_CHUNK_ROWS as u64);
        let mut launch = stream.raw().launch_builder(function);
        launch
            .arg(a)
            .arg(da)
            .arg(dz)
            .arg(partial)
            .arg(&r)
            .arg(&c)
            .arg(&k);
        // SAFETY: the function's element type is T's (`Activation` pairs each type with
        // its kernel); the thread for
        // (chunk k, column c) reads a and da and writes dz at r·cols + c for the chunk's
        // rows r < rows, and writes partial[k·cols + c] for k < column_chunks(rows);
        // every extent is checked above.
        unsafe { launch.launch(config) }.what("relu_backward_partials failed to launch")?;
        Ok(())
    }

    /// A bias gradient from stage 1's partial sums: `column_sums_f32` over the
    /// [`column_chunks`]`(rows)` rows of `partial`, into `out`.
    pub fn sum_partials(
        &self,
        stream: &Stream,
        partial: &DeviceBuffer<f32>,
        out: &mut DeviceBuffer<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<(), GpuError> {
        self.column_sums(stream, partial, out, column_chunks(rows), cols)
    }
}

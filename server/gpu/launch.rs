//! Typed launchers over `kernels/*.cu`: one method per kernel, taking device buffers
//! and sizes, checking every buffer against the elements the kernel will touch before
//! launching it. That check is what makes each `// SAFETY:` line below true, and what
//! turns a wrong size into a [`GpuError::Shape`] instead of an out-of-bounds access.
//! The kernels' parameter lists are written beside each launch; the files themselves
//! document what each computes. Grids come from [`LaunchShape`] (`launch/shape.rs`),
//! which the kernels' CPU emulation uses too.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, PushKernelArg};
use cudarc::nvrtc::Ptx;
use half::bf16;

use super::error::{DriverContext, GpuError};
use super::kernels::{self, FILES};
use super::nvrtc::{Binary, Target};
use super::stream::{DeviceBuffer, Stream};

mod columns;
mod shape;
pub use columns::Activation;
pub use shape::{COLUMN_CHUNK_ROWS, LaunchShape, column_chunks, fills_the_gpu};

/// Every kernel function, compiled and loaded.
pub struct Kernels {
    busy: CudaFunction,
    add_bias: CudaFunction,
    relu: CudaFunction,
    relu_backward: CudaFunction,
    to_bf16: CudaFunction,
    round_bf16: CudaFunction,
    xent: CudaFunction,
    column_sums: CudaFunction,
    scaled_sum: CudaFunction,
    sgd: CudaFunction,
    adam: CudaFunction,
    bias_relu: CudaFunction,
    bias_relu_bf16: CudaFunction,
    column_partials: CudaFunction,
    relu_backward_partials: CudaFunction,
    relu_backward_partials_bf16: CudaFunction,
}

/// Adam's hyper-parameters and bias corrections for one step.
#[derive(Debug, Clone, Copy)]
pub struct AdamStep {
    /// Learning rate.
    pub lr: f32,
    /// First-moment decay β1.
    pub beta1: f32,
    /// Second-moment decay β2.
    pub beta2: f32,
    /// Added to the denominator.
    pub eps: f32,
    /// 1 − β1^t.
    pub c1: f32,
    /// 1 − β2^t.
    pub c2: f32,
}

pub(super) fn need<T>(
    buffer: &DeviceBuffer<T>,
    elements: usize,
    name: &str,
) -> Result<(), GpuError> {
    if buffer.len() >= elements {
        Ok(())
    } else {
        Err(GpuError::Shape(format!(
            "`{name}` holds {} elements, the kernel touches {elements}",
            buffer.len()
        )))
    }
}

impl Kernels {
    /// Compiles every file in `kernels/` for `target`, has the driver load each
    /// module, and finds every function: all of it works, or this fails.
    pub(super) fn load(ctx: &Arc<CudaContext>, target: Target) -> Result<Self, GpuError> {
        let mut modules = Vec::with_capacity(FILES.len());
        for (name, binary) in kernels::compile_all(target)? {
            let image = match binary {
                Binary::Cubin(bytes) => Ptx::from_binary(bytes),
                Binary::Ptx(text) => Ptx::from_src(text),
            };
            let module = ctx.load_module(image).map_err(|source| GpuError::Driver {
                what: "the driver could not load a compiled kernel module",
                source,
            })?;
            modules.push((name, module));
        }
        let function = |name: &str| -> Result<CudaFunction, GpuError> {
            let file =
                kernels::file_for(name).ok_or_else(|| GpuError::UnknownKernel(name.into()))?;
            let (_, module) = modules
                .iter()
                .find(|(loaded, _)| *loaded == file.name)
                .ok_or_else(|| GpuError::UnknownKernel(name.into()))?;
            module
                .load_function(name)
                .what("a kernel function is missing from its module")
        };
        Ok(Self {
            busy: function("busy_f32")?,
            add_bias: function("add_bias_f32")?,
            relu: function("relu_f32")?,
            relu_backward: function("relu_backward_f32")?,
            to_bf16: function("f32_to_bf16")?,
            round_bf16: function("round_bf16_f32")?,
            xent: function("softmax_xent_f32")?,
            column_sums: function("column_sums_f32")?,
            scaled_sum: function("scaled_sum_f32")?,
            sgd: function("sgd_f32")?,
            adam: function("adam_f32")?,
            bias_relu: function("bias_relu_f32")?,
            bias_relu_bf16: function("bias_relu_bf16")?,
            column_partials: function("column_partial_sums_f32")?,
            relu_backward_partials: function("relu_backward_partials_f32")?,
            relu_backward_partials_bf16: function("relu_backward_partials_bf16")?,
        })
    }

    /// Launches an element-wise kernel `f(const A* x, B* y, u64 n)` that reads x[i] and
    /// writes y[i] for i < n.
    fn elementwise<A, B>(
        &self,
        function: &CudaFunction,
        failed: &'static str,
        stream: &Stream,
        x: &DeviceBuffer<A>,
        y: &mut DeviceBuffer<B>,
        n: usize,
    ) -> Result<(), GpuError> {
        need(x, n, "x")?;
        need(y, n, "y")?;
        let (n64, config) = (n as u64, LaunchShape::Elementwise { n }.config()?);
        let mut launch = stream.raw().launch_builder(function);
        launch.arg(x).arg(y).arg(&n64);
        // SAFETY: `function` is one of relu_f32, f32_to_bf16 and round_bf16_f32, whose
        // parameters are (const A* x, B* y, u64 n) with these element types; each
        // thread reads x[i] and writes y[i] for i < n, and both buffers hold at least n
        // elements (checked above).
        unsafe { launch.launch(config) }.what(failed)?;
        Ok(())
    }

    /// `busy_f32(float* data, u64 n, u32 iterations)`: each element of `data` run
    /// through `iterations` dependent FMAs from its own value, in place, on `blocks`
    /// blocks of 256 threads.
    pub fn busy(
        &self,
        stream: &Stream,
        out: &mut DeviceBuffer<f32>,
        iterations: u32,
        blocks: u32,
    ) -> Result<(), GpuError> {
        let n = out.len() as u64;
        let config = LaunchShape::Busy { blocks }.config()?;
        let mut launch = stream.raw().launch_builder(&self.busy);
        launch.arg(out).arg(&n).arg(&iterations);
        // SAFETY: the kernel reads and writes out[0..n) with a grid-stride loop and n is
        // out's length.
        unsafe { launch.launch(config) }.what("busy_f32 failed to launch")?;
        Ok(())
    }

    /// `relu_f32(const float* x, float* y, u64 n)`: y = max(x, 0).
    pub fn relu(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<f32>,
        y: &mut DeviceBuffer<f32>,
        n: usize,
    ) -> Result<(), GpuError> {
        self.elementwise(&self.relu, "relu_f32 failed to launch", stream, x, y, n)
    }

    /// `add_bias_f32(float* y, const float* bias, u64 rows, u64 cols)`: y[r, c] += bias[c].
    pub fn add_bias(
        &self,
        stream: &Stream,
        y: &mut DeviceBuffer<f32>,
        bias: &DeviceBuffer<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<(), GpuError> {
        need(y, rows * cols, "y")?;
        need(bias, cols, "bias")?;
        let config = LaunchShape::AddBias { rows, cols }.config()?;
        let (r, c) = (rows as u64, cols as u64);
        let mut launch = stream.raw().launch_builder(&self.add_bias);
        launch.arg(y).arg(bias).arg(&r).arg(&c);
        // SAFETY: touches y[0..rows·cols) and bias[0..cols); both checked above.
        unsafe { launch.launch(config) }.what("add_bias_f32 failed to launch")?;
        Ok(())
    }

    /// `relu_backward_f32(const float* x, const float* grad_out, float* grad_in, u64 n)`.
    pub fn relu_backward(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<f32>,
        grad_out: &DeviceBuffer<f32>,
        grad_in: &mut DeviceBuffer<f32>,
        n: usize,
    ) -> Result<(), GpuError> {
        need(x, n, "x")?;
        need(grad_out, n, "grad_out")?;
        need(grad_in, n, "grad_in")?;
        let (n64, config) = (n as u64, LaunchShape::Elementwise { n }.config()?);
        let mut launch = stream.raw().launch_builder(&self.relu_backward);
        launch.arg(x).arg(grad_out).arg(grad_in).arg(&n64);
        // SAFETY: element i of each of the three buffers, i < n; all checked above.
        unsafe { launch.launch(config) }.what("relu_backward_f32 failed to launch")?;
        Ok(())
    }

    /// `f32_to_bf16(const float* x, bf16* y, u64 n)`.
    pub fn to_bf16(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<f32>,
        y: &mut DeviceBuffer<bf16>,
        n: usize,
    ) -> Result<(), GpuError> {
        self.elementwise(
            &self.to_bf16,
            "f32_to_bf16 failed to launch",
            stream,
            x,
            y,
            n,
        )
    }

    /// `round_bf16_f32(const float* x, float* y, u64 n)`: y = x rounded to BF16.
    pub fn round_bf16(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<f32>,
        y: &mut DeviceBuffer<f32>,
        n: usize,
    ) -> Result<(), GpuError> {
        self.elementwise(
            &self.round_bf16,
            "round_bf16_f32 failed to launch",
            stream,
            x,
            y,
            n,
        )
    }

    /// `round_bf16_f32` with x and y the same buffer: rounds `x[0..n)` in place.
    pub fn round_bf16_in_place(
        &self,
        stream: &Stream,
        x: &mut DeviceBuffer<f32>,
        n: usize,
    ) -> Result<(), GpuError> {
        need(x, n, "x")?;
        let (n64, config) = (n as u64, LaunchShape::Elementwise { n }.config()?);
        let address = {
            let (address, _sync) = cudarc::driver::DevicePtrMut::device_ptr_mut(x, stream.raw());
            address
        };
        let mut launch = stream.raw().launch_builder(&self.round_bf16);
        launch.arg(&address).arg(&address).arg(&n64);
        // SAFETY: thread i reads and then writes element i only, so reading and writing
        // one buffer is safe; the buffer holds at least n floats (checked above) and is
        // borrowed mutably for the whole call, so nothing else uses it meanwhile.
        unsafe { launch.launch(config) }.what("round_bf16_f32 failed to launch")?;
        Ok(())
    }

    /// `softmax_xent_f32(logits, bias, labels, loss, grad, rows, classes)` with the
    /// labels starting at element `first_label` of `labels`. Every label must lie in
    /// `0..classes`: the caller uploads only labels it generated (checked there).
    #[allow(clippy::too_many_arguments)]
    pub fn softmax_xent(
        &self,
        stream: &Stream,
        logits: &DeviceBuffer<f32>,
        bias: &DeviceBuffer<f32>,
        labels: &DeviceBuffer<i32>,
        first_label: usize,
        loss: &mut DeviceBuffer<f32>,
        grad: &mut DeviceBuffer<f32>,
        rows: usize,
        classes: usize,
    ) -> Result<(), GpuError> {
        need(logits, rows * classes, "logits")?;
        need(bias, classes, "bias")?;
        need(labels, first_label + rows, "labels")?;
        need(loss, rows, "loss")?;
        need(grad, rows * classes, "grad")?;
        let config = LaunchShape::SoftmaxXent { rows, classes }.config()?;
        let (r, c) = (rows as u64, classes as u64);
        let labels = labels.slice(first_label..first_label + rows);
        let mut launch = stream.raw().launch_builder(&self.xent);
        launch
            .arg(logits)
            .arg(bias)
            .arg(&labels)
            .arg(loss)
            .arg(grad)
            .arg(&r)
            .arg(&c);
        // SAFETY: one thread per row reads logits[row·classes..+classes], bias[0..classes],
        // labels[row] and logits/bias at that label (in 0..classes, see above), and writes
        // loss[row] and grad[row·classes..+classes]; every extent is checked above.
        unsafe { launch.launch(config) }.what("softmax_xent_f32 failed to launch")?;
        Ok(())
    }

    /// `column_sums_f32(const float* x, float* out, u64 rows, u64 cols)`.
    pub fn column_sums(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<f32>,
        out: &mut DeviceBuffer<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<(), GpuError> {
        need(x, rows * cols, "x")?;
        need(out, cols, "out")?;
        let config = LaunchShape::ColumnSums { rows, cols }.config()?;
        let (r, c) = (rows as u64, cols as u64);
        let mut launch = stream.raw().launch_builder(&self.column_sums);
        launch.arg(x).arg(out).arg(&r).arg(&c);
        // SAFETY: one thread per column reads x[r·cols + c] for r < rows and writes
        // out[c]; both extents are checked above.
        unsafe { launch.launch(config) }.what("column_sums_f32 failed to launch")?;
        Ok(())
    }

    /// `scaled_sum_f32(const float* x, float* out, u64 n, float scale)`: `out[0]` =
    /// scale × sum of x[0..n), as one block of 256 threads (its shared array's size).
    pub fn scaled_sum(
        &self,
        stream: &Stream,
        x: &DeviceBuffer<f32>,
        out: &mut DeviceBuffer<f32>,
        n: usize,
        scale: f32,
    ) -> Result<(), GpuError> {
        need(x, n, "x")?;
        need(out, 1, "out")?;
        let n64 = n as u64;
        let config = LaunchShape::ScaledSum { n }.config()?;
        let mut launch = stream.raw().launch_builder(&self.scaled_sum);
        launch.arg(x).arg(out).arg(&n64).arg(&scale);
        // SAFETY: launched as the one block of 256 threads its shared array is sized
        // for; reads x[0..n) and writes out[0], both checked above.
        unsafe { launch.launch(config) }.what("scaled_sum_f32 failed to launch")?;
        Ok(())
    }

    /// `sgd_f32(float* p, const float* g, float lr, u64 n)`: p -= lr · g.
    pub fn sgd(
        &self,
        stream: &Stream,
        p: &mut DeviceBuffer<f32>,
        g: &DeviceBuffer<f32>,
        lr: f32,
    ) -> Result<(), GpuError> {
        let n = p.len();
        need(g, n, "g")?;
        let (n64, config) = (n as u64, LaunchShape::Elementwise { n }.config()?);
        let mut launch = stream.raw().launch_builder(&self.sgd);
        launch.arg(p).arg(g).arg(&lr).arg(&n64);
        // SAFETY: element i of p and g for i < n = p's length; g is checked above.
        unsafe { launch.launch(config) }.what("sgd_f32 failed to launch")?;
        Ok(())
    }

    /// `adam_f32(p, g, m, v, lr, beta1, beta2, eps, c1, c2, n)` over all of `p`.
    pub fn adam(
        &self,
        stream: &Stream,
        p: &mut DeviceBuffer<f32>,
        g: &DeviceBuffer<f32>,
        moments: (&mut DeviceBuffer<f32>, &mut DeviceBuffer<f32>),
        step: AdamStep,
    ) -> Result<(), GpuError> {
        let n = p.len();
        let (m, v) = moments;
        need(g, n, "g")?;
        need(m, n, "m")?;
        need(v, n, "v")?;
        let (n64, config) = (n as u64, LaunchShape::Elementwise { n }.config()?);
        let AdamStep {
            lr,
            beta1,
            beta2,
            eps,
            c1,
            c2,
        } = step;
        let mut launch = stream.raw().launch_builder(&self.adam);
        launch
            .arg(p)
            .arg(g)
            .arg(m)
            .arg(v)
            .arg(&lr)
            .arg(&beta1)
            .arg(&beta2)
            .arg(&eps)
            .arg(&c1)
            .arg(&c2)
            .arg(&n64);
        // SAFETY: element i of p, g, m and v for i < n = p's length; the others are
        // checked above.
        unsafe { launch.launch(config) }.what("adam_f32 failed to launch")?;
        Ok(())
    }
}

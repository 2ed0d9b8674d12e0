//! The training run on the GPU: the same MLP, data, initialisation and optimiser as the
//! CPU reference in [`super::train`], step for step, so the two loss curves agree.
//! Every matrix product is a cuBLAS `gemm_ex` (row-major operands mapped onto cuBLAS's
//! column-major view); bias adds, ReLU, the fused softmax cross-entropy, bias gradients,
//! the batch-mean loss and the SGD/Adam updates are our kernels from `kernels/`.
//!
//! Mixed precision (`bf16`) keeps FP32 master weights: each step casts the weights and
//! activations to BF16 for the forward GEMMs (tensor cores, FP32 accumulation) and runs
//! the backward GEMMs in FP32 on the BF16-rounded values, which is exactly what the CPU
//! reference computes. The loss stays on the device until the loop reads it.

use std::ffi::c_void;
use std::sync::Arc;
use std::time::Instant;

use cudarc::cublas::CudaBlas;
use cudarc::cublas::result as blas_result;
use cudarc::cublas::sys::{cublasComputeType_t, cublasGemmAlgo_t, cublasOperation_t, cudaDataType};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DriverError, LaunchConfig, PushKernelArg,
};

use super::cuda::CudaHandle;
use super::stats::summarize;
use super::train::{
    CLASSES, DATASET, FEATURES, LossPoint, Mlp, Tickets, TrainParams, TrainResult, accuracy,
};
use super::{PAST_LIMIT_TRY_FEWER_STEPS, check_deadline};

fn derr(e: DriverError) -> String {
    format!("CUDA error in the training run: {e}")
}

/// A row-major matrix operand on the device: address, stored shape, whether the product
/// reads its transpose, and its element type.
#[derive(Clone, Copy)]
struct Operand {
    ptr: u64,
    rows: usize,
    cols: usize,
    t: bool,
    dtype: cudaDataType,
}

impl Operand {
    fn new<T>(
        buf: &CudaSlice<T>,
        stream: &Arc<CudaStream>,
        rows: usize,
        cols: usize,
        dtype: cudaDataType,
    ) -> Self {
        let (ptr, _sync) = buf.device_ptr(stream);
        Self {
            ptr,
            rows,
            cols,
            t: false,
            dtype,
        }
    }

    fn offset_rows(self, rows: usize, elem_bytes: usize) -> Self {
        Self {
            ptr: self.ptr + (rows * self.cols * elem_bytes) as u64,
            ..self
        }
    }

    fn t(self) -> Self {
        Self { t: !self.t, ..self }
    }

    fn shape(self) -> (usize, usize) {
        if self.t {
            (self.cols, self.rows)
        } else {
            (self.rows, self.cols)
        }
    }
}

/// Row-major `c = op(a) · op(b)` in FP32 output, accumulating in FP32.
fn gemm(blas: &CudaBlas, a: Operand, b: Operand, c: u64) -> Result<(), String> {
    let ((m, k), (k2, n)) = (a.shape(), b.shape());
    if k != k2 || a.dtype as u32 != b.dtype as u32 {
        return Err(format!(
            "internal: GEMM shapes {m}×{k} · {k2}×{n} do not match"
        ));
    }
    let int = |v: usize| i32::try_from(v).map_err(|_| "matrix too large for cuBLAS".to_string());
    let trans = |t: bool| {
        if t {
            cublasOperation_t::CUBLAS_OP_T
        } else {
            cublasOperation_t::CUBLAS_OP_N
        }
    };
    let (alpha, beta) = (1.0f32, 0.0f32);
    // In cuBLAS's column-major view a row-major matrix is its transpose, so the row-major
    // product C = A·B is computed as Cᵀ = Bᵀ·Aᵀ: B first, then A, leading dimensions the
    // stored column counts.
    // SAFETY: a, b and c are live device allocations on the handle's stream holding at
    // least rows × cols elements of their dtype (the callers size them from the same
    // shapes); m, n, k and the leading dimensions describe exactly those shapes; alpha
    // and beta are f32 as CUBLAS_COMPUTE_32F requires and outlive the call.
    unsafe {
        blas_result::gemm_ex(
            *blas.handle(),
            trans(b.t),
            trans(a.t),
            int(n)?,
            int(m)?,
            int(k)?,
            (&raw const alpha).cast::<c_void>(),
            b.ptr as *const c_void,
            b.dtype,
            int(b.cols)?,
            a.ptr as *const c_void,
            a.dtype,
            int(a.cols)?,
            (&raw const beta).cast::<c_void>(),
            c as *mut c_void,
            cudaDataType::CUDA_R_32F,
            int(n)?,
            cublasComputeType_t::CUBLAS_COMPUTE_32F,
            cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| format!("cuBLAS gemm_ex failed in the training run: {e}"))
}

/// Launches `$f` over `$n` elements with the given arguments.
macro_rules! launch {
    ($stream:expr, $f:expr, $n:expr; $($arg:expr),+ $(,)?) => {{
        let mut builder = $stream.launch_builder(&$f);
        $(builder.arg($arg);)+
        let n = u32::try_from($n).map_err(|_| "tensor too large".to_string())?;
        // SAFETY: every call site passes the kernel's exact parameter list (see
        // kernels/*.cu), with buffers holding at least `$n` elements (or the sizes the
        // kernel's comment names), all allocated on this stream.
        unsafe { builder.launch(LaunchConfig::for_num_elems(n.max(1))) }.map_err(derr)?;
    }};
}

struct Kernels {
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
}

impl Kernels {
    fn load(gpu: &mut CudaHandle) -> Result<Self, String> {
        Ok(Self {
            add_bias: gpu.function("add_bias_f32")?,
            relu: gpu.function("relu_f32")?,
            relu_backward: gpu.function("relu_backward_f32")?,
            to_bf16: gpu.function("f32_to_bf16")?,
            round_bf16: gpu.function("round_bf16_f32")?,
            xent: gpu.function("softmax_xent_f32")?,
            column_sums: gpu.function("column_sums_f32")?,
            scaled_sum: gpu.function("scaled_sum_f32")?,
            sgd: gpu.function("sgd_f32")?,
            adam: gpu.function("adam_f32")?,
        })
    }
}

/// Everything one run keeps on the device.
struct DeviceRun {
    stream: Arc<CudaStream>,
    blas: Arc<CudaBlas>,
    k: Kernels,
    bf16: bool,
    adam: bool,
    lr: f32,
    t: i32,
    batch: usize,
    hidden: usize,
    /// Tickets twice over, so any batch window is contiguous: FP32, BF16-rounded FP32, BF16.
    x: CudaSlice<f32>,
    x_round: CudaSlice<f32>,
    x_bf16: CudaSlice<half::bf16>,
    labels: CudaSlice<i32>,
    params: [CudaSlice<f32>; 4],
    grads: [CudaSlice<f32>; 4],
    moments: [CudaSlice<f32>; 8],
    w1_bf16: CudaSlice<half::bf16>,
    w2_bf16: CudaSlice<half::bf16>,
    w2_round: CudaSlice<f32>,
    z1: CudaSlice<f32>,
    a1: CudaSlice<f32>,
    a1_bf16: CudaSlice<half::bf16>,
    z2: CudaSlice<f32>,
    dz2: CudaSlice<f32>,
    da1: CudaSlice<f32>,
    dz1: CudaSlice<f32>,
    losses: CudaSlice<f32>,
    loss: CudaSlice<f32>,
}

impl DeviceRun {
    fn new(gpu: &mut CudaHandle, params: &TrainParams, data: &Tickets) -> Result<Self, String> {
        let k = Kernels::load(gpu)?;
        let blas = gpu.blas()?;
        let s = Arc::clone(&gpu.stream);
        let (b, h) = (params.batch, params.hidden);
        let twice = |v: &[f32]| [v, v].concat();
        let x = s.clone_htod(&twice(&data.x)).map_err(derr)?;
        let rounded: Vec<f32> = data
            .x
            .iter()
            .map(|v| half::bf16::from_f32(*v).to_f32())
            .collect();
        let x_round = s.clone_htod(&twice(&rounded)).map_err(derr)?;
        let x_bf16 = s
            .clone_htod(
                &twice(&data.x)
                    .iter()
                    .map(|v| half::bf16::from_f32(*v))
                    .collect::<Vec<_>>(),
            )
            .map_err(derr)?;
        let labels: Vec<i32> = data.y.iter().chain(&data.y).map(|&c| c as i32).collect();
        let model = Mlp::init(h);
        let up = |v: &Vec<f32>| s.clone_htod(v).map_err(derr);
        let zeros = |n: usize| s.alloc_zeros::<f32>(n).map_err(derr);
        let sizes = [FEATURES * h, h, h * CLASSES, CLASSES];
        Ok(Self {
            labels: s.clone_htod(&labels).map_err(derr)?,
            params: [
                up(&model.w1)?,
                up(&model.b1)?,
                up(&model.w2)?,
                up(&model.b2)?,
            ],
            grads: [
                zeros(sizes[0])?,
                zeros(sizes[1])?,
                zeros(sizes[2])?,
                zeros(sizes[3])?,
            ],
            moments: [
                zeros(sizes[0])?,
                zeros(sizes[0])?,
                zeros(sizes[1])?,
                zeros(sizes[1])?,
                zeros(sizes[2])?,
                zeros(sizes[2])?,
                zeros(sizes[3])?,
                zeros(sizes[3])?,
            ],
            w1_bf16: s.alloc_zeros(sizes[0]).map_err(derr)?,
            w2_bf16: s.alloc_zeros(sizes[2]).map_err(derr)?,
            w2_round: zeros(sizes[2])?,
            z1: zeros(b * h)?,
            a1: zeros(b * h)?,
            a1_bf16: s.alloc_zeros(b * h).map_err(derr)?,
            z2: zeros(b * CLASSES)?,
            dz2: zeros(b * CLASSES)?,
            da1: zeros(b * h)?,
            dz1: zeros(b * h)?,
            losses: zeros(b)?,
            loss: zeros(1)?,
            x,
            x_round,
            x_bf16,
            stream: s,
            blas,
            k,
            bf16: params.precision == "bf16",
            adam: params.optimizer == "adam",
            lr: params.lr(),
            t: 0,
            batch: b,
            hidden: h,
        })
    }

    /// Queues one training step on batch `step` (nothing waits for the GPU).
    fn step(&mut self, step: usize) -> Result<(), String> {
        let (b, h, s) = (self.batch, self.hidden, Arc::clone(&self.stream));
        let (b64, h64, c64) = (b as u64, h as u64, CLASSES as u64);
        let start = (step * b) % DATASET;
        let (f32_t, bf_t) = (cudaDataType::CUDA_R_32F, cudaDataType::CUDA_R_16BF);
        let op = |buf: &CudaSlice<f32>, rows, cols| Operand::new(buf, &s, rows, cols, f32_t);
        // Forward.
        let (x_fwd, w1_fwd, w2_fwd) = if self.bf16 {
            let (n1, n2) = ((FEATURES * h) as u64, (h * CLASSES) as u64);
            launch!(s, self.k.to_bf16, n1; &self.params[0], &mut self.w1_bf16, &n1);
            launch!(s, self.k.to_bf16, n2; &self.params[2], &mut self.w2_bf16, &n2);
            launch!(s, self.k.round_bf16, n2; &self.params[2], &mut self.w2_round, &n2);
            (
                Operand::new(&self.x_bf16, &s, 2 * DATASET, FEATURES, bf_t).offset_rows(start, 2),
                Operand::new(&self.w1_bf16, &s, FEATURES, h, bf_t),
                Operand::new(&self.w2_bf16, &s, h, CLASSES, bf_t),
            )
        } else {
            (
                op(&self.x, 2 * DATASET, FEATURES).offset_rows(start, 4),
                op(&self.params[0], FEATURES, h),
                op(&self.params[2], h, CLASSES),
            )
        };
        let x_fwd = Operand { rows: b, ..x_fwd };
        gemm(&self.blas, x_fwd, w1_fwd, op(&self.z1, b, h).ptr)?;
        launch!(s, self.k.add_bias, b * h; &mut self.z1, &self.params[1], &b64, &h64);
        let n_hidden = (b * h) as u64;
        launch!(s, self.k.relu, b * h; &self.z1, &mut self.a1, &n_hidden);
        let a1_fwd = if self.bf16 {
            // a1 ← bf16(a1) in place (element-wise, so reading and writing one buffer is safe).
            let a1 = op(&self.a1, b, h).ptr;
            let mut builder = s.launch_builder(&self.k.round_bf16);
            builder.arg(&a1).arg(&a1).arg(&n_hidden);
            // SAFETY: round_bf16_f32(const float* x, float* y, u64 n) reads and writes
            // element i only, and a1 holds n = b × h floats.
            unsafe {
                builder.launch(LaunchConfig::for_num_elems(
                    u32::try_from(b * h).map_err(|_| "too large")?,
                ))
            }
            .map_err(derr)?;
            launch!(s, self.k.to_bf16, b * h; &self.a1, &mut self.a1_bf16, &n_hidden);
            Operand::new(&self.a1_bf16, &s, b, h, bf_t)
        } else {
            op(&self.a1, b, h)
        };
        gemm(&self.blas, a1_fwd, w2_fwd, op(&self.z2, b, CLASSES).ptr)?;
        let label_ptr = {
            let (p, _sync) = self.labels.device_ptr(&s);
            p + (start * 4) as u64
        };
        launch!(s, self.k.xent, b; &self.z2, &self.params[3], &label_ptr, &mut self.losses, &mut self.dz2, &b64, &c64);
        let inv_b = 1.0f32 / b as f32;
        {
            let mut builder = s.launch_builder(&self.k.scaled_sum);
            builder
                .arg(&self.losses)
                .arg(&mut self.loss)
                .arg(&b64)
                .arg(&inv_b);
            // SAFETY: scaled_sum_f32(const float* x, float* out, u64 n, float scale) must
            // run as one block of 256 threads (its shared array has 256 slots); losses
            // holds b floats and loss one.
            unsafe {
                builder.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(derr)?;
        }
        // Backward (FP32 GEMMs; on BF16-rounded values under mixed precision).
        let x_bwd = Operand {
            rows: b,
            ..op(
                if self.bf16 { &self.x_round } else { &self.x },
                2 * DATASET,
                FEATURES,
            )
            .offset_rows(start, 4)
        };
        let w2_bwd = op(
            if self.bf16 {
                &self.w2_round
            } else {
                &self.params[2]
            },
            h,
            CLASSES,
        );
        gemm(
            &self.blas,
            op(&self.a1, b, h).t(),
            op(&self.dz2, b, CLASSES),
            op(&self.grads[2], h, CLASSES).ptr,
        )?;
        launch!(s, self.k.column_sums, CLASSES; &self.dz2, &mut self.grads[3], &b64, &c64);
        gemm(
            &self.blas,
            op(&self.dz2, b, CLASSES),
            w2_bwd.t(),
            op(&self.da1, b, h).ptr,
        )?;
        launch!(s, self.k.relu_backward, b * h; &self.z1, &self.da1, &mut self.dz1, &n_hidden);
        gemm(
            &self.blas,
            x_bwd.t(),
            op(&self.dz1, b, h),
            op(&self.grads[0], FEATURES, h).ptr,
        )?;
        launch!(s, self.k.column_sums, h; &self.dz1, &mut self.grads[1], &b64, &h64);
        self.update()
    }

    fn update(&mut self) -> Result<(), String> {
        let s = Arc::clone(&self.stream);
        self.t += 1;
        let (beta1, beta2, eps) = (0.9f32, 0.999f32, 1e-8f32);
        let (c1, c2) = (1.0 - beta1.powi(self.t), 1.0 - beta2.powi(self.t));
        let lr = self.lr;
        let [m0, v0, m1, v1, m2, v2, m3, v3] = &mut self.moments;
        let moments = [(m0, v0), (m1, v1), (m2, v2), (m3, v3)];
        for ((param, grad), (m, v)) in self.params.iter_mut().zip(&self.grads).zip(moments) {
            let n = param.len() as u64;
            if self.adam {
                launch!(s, self.k.adam, n; param, grad, m, v, &lr, &beta1, &beta2, &eps, &c1, &c2, &n);
            } else {
                launch!(s, self.k.sgd, n; param, grad, &lr, &n);
            }
        }
        Ok(())
    }

    /// Copies the batch-mean loss of the last step to the host: waits for the GPU.
    fn read_loss(&self) -> Result<f32, String> {
        Ok(self.stream.clone_dtoh(&self.loss).map_err(derr)?[0])
    }

    fn model(&self) -> Result<Mlp, String> {
        let get = |i: usize| self.stream.clone_dtoh(&self.params[i]).map_err(derr);
        Ok(Mlp {
            w1: get(0)?,
            b1: get(1)?,
            w2: get(2)?,
            b2: get(3)?,
            hidden: self.hidden,
        })
    }
}

/// Milliseconds per step with the loss read every `read_every` steps: a fresh model,
/// `steps` steps, host clock from the first launch to the last result.
pub fn time_logging(
    gpu: &mut CudaHandle,
    params: &TrainParams,
    data: &Tickets,
    steps: usize,
    read_every: usize,
    deadline: Instant,
) -> Result<f64, String> {
    let mut run = DeviceRun::new(gpu, params, data)?;
    run.stream.synchronize().map_err(derr)?;
    let start = Instant::now();
    let mut seen = 0.0f32;
    for step in 0..steps {
        check_deadline(deadline, PAST_LIMIT_TRY_FEWER_STEPS)?;
        run.step(step)?;
        if (step + 1) % read_every == 0 {
            seen += run.read_loss()?;
        }
    }
    run.stream.synchronize().map_err(derr)?;
    std::hint::black_box(seen);
    Ok(start.elapsed().as_secs_f64() * 1e3 / steps as f64)
}

/// Trains on `gpu` when given, else runs the CPU reference.
pub fn run(
    gpu: Option<&mut CudaHandle>,
    params: &TrainParams,
    deadline: Instant,
) -> Result<TrainResult, String> {
    match gpu {
        Some(gpu) => run_cuda(gpu, params, deadline),
        None => super::train::run_cpu(params, deadline),
    }
}

/// Trains on the GPU.
pub fn run_cuda(
    gpu: &mut CudaHandle,
    params: &TrainParams,
    deadline: Instant,
) -> Result<TrainResult, String> {
    let data = Tickets::generate();
    let mut run = DeviceRun::new(gpu, params, &data)?;
    let ctx = Arc::clone(&gpu.ctx);
    let event = || {
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(derr)
    };
    let mut marks = vec![event()?];
    run.stream.synchronize().map_err(derr)?;
    marks[0].record(&run.stream).map_err(derr)?;
    let mut curve = Vec::new();
    for step in 0..params.steps {
        check_deadline(deadline, PAST_LIMIT_TRY_FEWER_STEPS)?;
        run.step(step)?;
        let mark = event()?;
        mark.record(&run.stream).map_err(derr)?;
        marks.push(mark);
        if (step + 1) % params.log_every == 0 || step + 1 == params.steps {
            curve.push(LossPoint {
                step: step + 1,
                loss: run.read_loss()?,
            });
        }
    }
    run.stream.synchronize().map_err(derr)?;
    let step_times = marks
        .windows(2)
        .map(|pair| pair[0].elapsed_ms(&pair[1]).map(f64::from).map_err(derr))
        .collect::<Result<Vec<_>, _>>()?;
    let step_ms = summarize(&step_times).ok_or("no steps")?;
    let probe = params.steps.min(20);
    let read_every_step_ms = time_logging(gpu, params, &data, probe, 1, deadline)?;
    let read_every_n_ms = time_logging(
        gpu,
        params,
        &data,
        probe,
        params.log_every.min(probe).max(1),
        deadline,
    )?;
    Ok(TrainResult {
        params: params.clone(),
        loss_curve: curve,
        step_ms,
        samples_per_sec: params.batch as f64 / (step_ms.median / 1e3),
        accuracy: accuracy(&run.model()?, &data),
        read_every_step_ms,
        read_every_n_ms,
    })
}

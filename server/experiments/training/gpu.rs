//! The training run on the GPU: the same MLP, data, initialisation and optimiser as the
//! CPU reference in [`super::model`], step for step, so the two loss curves agree.
//! Every matrix product goes through `gpu::blas`; bias adds, ReLU, the fused softmax
//! cross-entropy, bias gradients, the batch-mean loss and the SGD/Adam updates are our
//! kernels from `kernels/`, through their typed launchers.
//!
//! Mixed precision (`bf16`) keeps FP32 master weights: each step casts the weights and
//! activations to BF16 for the forward GEMMs (tensor cores, FP32 accumulation) and runs
//! the backward GEMMs in FP32 on the BF16-rounded values, which is exactly what the CPU
//! reference computes. The loss stays on the device until the loop reads it.

use std::sync::Arc;
use std::time::Instant;

use half::bf16;

use super::model::{CLASSES, DATASET, FEATURES, LOGGING_PROBE_STEPS, Mlp, Tickets, accuracy};
use super::ops::adam_step;
use super::{LossPoint, Optim, TrainParams, TrainPrecision, TrainResult};
use crate::experiments::ExperimentError;
use crate::gpu::{Blas, Compute, DeviceBuffer, Gpu, Kernels, Operand, Output, Stream};
use crate::measure::{Deadline, summarize};

/// Everything one run keeps on the device (the tuning labs drive it step by step too).
pub(crate) struct DeviceRun {
    pub(crate) stream: Stream,
    blas: Arc<Blas>,
    k: Arc<Kernels>,
    bf16: bool,
    adam: bool,
    lr: f32,
    t: i32,
    batch: usize,
    hidden: usize,
    /// Tickets twice over, so any batch window is contiguous: FP32, BF16-rounded FP32, BF16.
    x: DeviceBuffer<f32>,
    x_round: DeviceBuffer<f32>,
    x_bf16: DeviceBuffer<bf16>,
    labels: DeviceBuffer<i32>,
    /// W1, b1, W2, b2 (FP32 master weights), their gradients, and Adam's (m, v).
    params: [DeviceBuffer<f32>; 4],
    grads: [DeviceBuffer<f32>; 4],
    moments: [(DeviceBuffer<f32>, DeviceBuffer<f32>); 4],
    w1_bf16: DeviceBuffer<bf16>,
    w2_bf16: DeviceBuffer<bf16>,
    w2_round: DeviceBuffer<f32>,
    z1: DeviceBuffer<f32>,
    a1: DeviceBuffer<f32>,
    a1_bf16: DeviceBuffer<bf16>,
    z2: DeviceBuffer<f32>,
    dz2: DeviceBuffer<f32>,
    da1: DeviceBuffer<f32>,
    dz1: DeviceBuffer<f32>,
    losses: DeviceBuffer<f32>,
    loss: DeviceBuffer<f32>,
    /// The running sums of a step's micro-batches, once a lab asks for accumulation.
    accumulated: Option<Accumulated>,
}

/// A step's gradients and loss summed over its micro-batches (each already divided by
/// their count), with zeros to clear them for the next step.
struct Accumulated {
    grads: [DeviceBuffer<f32>; 4],
    loss: DeviceBuffer<f32>,
    zeros: DeviceBuffer<f32>,
}

impl DeviceRun {
    pub(crate) fn new(
        gpu: &mut Gpu,
        params: &TrainParams,
        data: &Tickets,
    ) -> Result<Self, ExperimentError> {
        if data.y.iter().any(|&c| c >= CLASSES) {
            return Err(ExperimentError::Failed(
                "a ticket label is out of range".into(),
            ));
        }
        let (k, blas) = (gpu.kernels(), gpu.blas());
        let s = gpu.stream().clone();
        let (b, h) = (params.batch, params.hidden);
        let twice = |v: &[f32]| [v, v].concat();
        let rounded: Vec<f32> = data.x.iter().map(|v| bf16::from_f32(*v).to_f32()).collect();
        let as_bf16: Vec<bf16> = twice(&data.x).iter().map(|v| bf16::from_f32(*v)).collect();
        let labels: Vec<i32> = data.y.iter().chain(&data.y).map(|&c| c as i32).collect();
        let model = Mlp::init(h);
        let sizes = [FEATURES * h, h, h * CLASSES, CLASSES];
        let zeros = |n: usize| s.zeros::<f32>(n);
        Ok(Self {
            x: s.upload(&twice(&data.x))?,
            x_round: s.upload(&twice(&rounded))?,
            x_bf16: s.upload(&as_bf16)?,
            labels: s.upload(&labels)?,
            params: [
                s.upload(&model.w1)?,
                s.upload(&model.b1)?,
                s.upload(&model.w2)?,
                s.upload(&model.b2)?,
            ],
            grads: [
                zeros(sizes[0])?,
                zeros(sizes[1])?,
                zeros(sizes[2])?,
                zeros(sizes[3])?,
            ],
            moments: [
                (zeros(sizes[0])?, zeros(sizes[0])?),
                (zeros(sizes[1])?, zeros(sizes[1])?),
                (zeros(sizes[2])?, zeros(sizes[2])?),
                (zeros(sizes[3])?, zeros(sizes[3])?),
            ],
            w1_bf16: s.zeros(sizes[0])?,
            w2_bf16: s.zeros(sizes[2])?,
            w2_round: zeros(sizes[2])?,
            z1: zeros(b * h)?,
            a1: zeros(b * h)?,
            a1_bf16: s.zeros(b * h)?,
            z2: zeros(b * CLASSES)?,
            dz2: zeros(b * CLASSES)?,
            da1: zeros(b * h)?,
            dz1: zeros(b * h)?,
            losses: zeros(b)?,
            loss: zeros(1)?,
            accumulated: None,
            stream: s,
            blas,
            k,
            bf16: params.precision == TrainPrecision::Bf16,
            adam: params.optimizer == Optim::Adam,
            lr: params.lr(),
            t: 0,
            batch: b,
            hidden: h,
        })
    }

    /// Queues one training step on batch `step` (nothing waits for the GPU).
    pub(crate) fn step(&mut self, step: usize) -> Result<(), ExperimentError> {
        self.forward_backward(step)?;
        self.update()
    }

    /// Queues micro-batch `step`, the `nth` (from 0) of an optimiser step of `of`
    /// micro-batches (gradient accumulation): its gradients and loss, divided by `of`,
    /// are added to the step's sums, and the last one updates the weights from the sums,
    /// leaves their mean loss where [`Self::read_loss`] reads it, and clears them. The
    /// same arithmetic as one step on the whole batch, since each micro-batch's
    /// gradients are means over its own rows. `of` ≤ 1 is a plain [`Self::step`].
    pub(crate) fn micro_step(
        &mut self,
        step: usize,
        nth: usize,
        of: usize,
    ) -> Result<(), ExperimentError> {
        if of <= 1 {
            return self.step(step);
        }
        self.forward_backward(step)?;
        let (s, k) = (self.stream.clone(), Arc::clone(&self.k));
        if self.accumulated.is_none() {
            let largest = self.grads.iter().map(DeviceBuffer::len).max().unwrap_or(1);
            self.accumulated = Some(Accumulated {
                grads: [
                    s.zeros(self.grads[0].len())?,
                    s.zeros(self.grads[1].len())?,
                    s.zeros(self.grads[2].len())?,
                    s.zeros(self.grads[3].len())?,
                ],
                loss: s.zeros(1)?,
                zeros: s.zeros(largest)?,
            });
        }
        let Some(sums) = self.accumulated.as_mut() else {
            return Ok(());
        };
        // sum -= (−1/of) · this micro-batch's value: the SGD kernel as an accumulator.
        let share = -1.0 / of as f32;
        for (sum, grad) in sums.grads.iter_mut().zip(&self.grads) {
            k.sgd(&s, sum, grad, share)?;
        }
        k.sgd(&s, &mut sums.loss, &self.loss, share)?;
        if nth + 1 < of {
            return Ok(());
        }
        // The last micro-batch: update from the sums, then clear them.
        std::mem::swap(&mut self.grads, &mut sums.grads);
        s.copy_on_device(&sums.loss, &mut self.loss)?;
        let updated = self.update();
        let Some(sums) = self.accumulated.as_mut() else {
            return updated;
        };
        std::mem::swap(&mut self.grads, &mut sums.grads);
        for sum in sums.grads.iter_mut().chain(std::iter::once(&mut sums.loss)) {
            s.copy_on_device(&sums.zeros, sum)?;
        }
        updated
    }

    /// Queues the forward and backward pass of batch `step`: the loss and every
    /// gradient, without touching the weights.
    fn forward_backward(&mut self, step: usize) -> Result<(), ExperimentError> {
        let (b, h) = (self.batch, self.hidden);
        let (s, k, blas) = (
            self.stream.clone(),
            Arc::clone(&self.k),
            Arc::clone(&self.blas),
        );
        let first = (step * b) % DATASET;
        let rows = 2 * DATASET;
        // Forward: z1 = x·W1 + b1, a1 = relu(z1), z2 = a1·W2 (BF16 operands when mixed).
        if self.bf16 {
            k.to_bf16(&s, &self.params[0], &mut self.w1_bf16, FEATURES * h)?;
            k.to_bf16(&s, &self.params[2], &mut self.w2_bf16, h * CLASSES)?;
            k.round_bf16(&s, &self.params[2], &mut self.w2_round, h * CLASSES)?;
            blas.gemm(
                Operand::new(&self.x_bf16, rows, FEATURES).window(first, b),
                Operand::new(&self.w1_bf16, FEATURES, h),
                Output::new(&mut self.z1, b, h),
                Compute::F32,
            )?;
        } else {
            blas.gemm(
                Operand::new(&self.x, rows, FEATURES).window(first, b),
                Operand::new(&self.params[0], FEATURES, h),
                Output::new(&mut self.z1, b, h),
                Compute::F32,
            )?;
        }
        k.add_bias(&s, &mut self.z1, &self.params[1], b, h)?;
        k.relu(&s, &self.z1, &mut self.a1, b * h)?;
        if self.bf16 {
            k.round_bf16_in_place(&s, &mut self.a1, b * h)?;
            k.to_bf16(&s, &self.a1, &mut self.a1_bf16, b * h)?;
            blas.gemm(
                Operand::new(&self.a1_bf16, b, h),
                Operand::new(&self.w2_bf16, h, CLASSES),
                Output::new(&mut self.z2, b, CLASSES),
                Compute::F32,
            )?;
        } else {
            blas.gemm(
                Operand::new(&self.a1, b, h),
                Operand::new(&self.params[2], h, CLASSES),
                Output::new(&mut self.z2, b, CLASSES),
                Compute::F32,
            )?;
        }
        k.softmax_xent(
            &s,
            &self.z2,
            &self.params[3],
            &self.labels,
            first,
            &mut self.losses,
            &mut self.dz2,
            b,
            CLASSES,
        )?;
        k.scaled_sum(&s, &self.losses, &mut self.loss, b, 1.0 / b as f32)?;
        // Backward, in FP32 (on BF16-rounded values under mixed precision).
        let x_bwd = if self.bf16 { &self.x_round } else { &self.x };
        let w2_bwd = if self.bf16 {
            &self.w2_round
        } else {
            &self.params[2]
        };
        blas.gemm(
            Operand::new(&self.a1, b, h).t(),
            Operand::new(&self.dz2, b, CLASSES),
            Output::new(&mut self.grads[2], h, CLASSES),
            Compute::F32,
        )?;
        k.column_sums(&s, &self.dz2, &mut self.grads[3], b, CLASSES)?;
        blas.gemm(
            Operand::new(&self.dz2, b, CLASSES),
            Operand::new(w2_bwd, h, CLASSES).t(),
            Output::new(&mut self.da1, b, h),
            Compute::F32,
        )?;
        k.relu_backward(&s, &self.z1, &self.da1, &mut self.dz1, b * h)?;
        blas.gemm(
            Operand::new(x_bwd, rows, FEATURES).window(first, b).t(),
            Operand::new(&self.dz1, b, h),
            Output::new(&mut self.grads[0], FEATURES, h),
            Compute::F32,
        )?;
        k.column_sums(&s, &self.dz1, &mut self.grads[1], b, h)?;
        Ok(())
    }

    fn update(&mut self) -> Result<(), ExperimentError> {
        let (s, k) = (self.stream.clone(), Arc::clone(&self.k));
        self.t += 1;
        let step = adam_step(self.lr, self.t);
        for ((param, grad), (m, v)) in self
            .params
            .iter_mut()
            .zip(&self.grads)
            .zip(&mut self.moments)
        {
            if self.adam {
                k.adam(&s, param, grad, (m, v), step)?;
            } else {
                k.sgd(&s, param, grad, self.lr)?;
            }
        }
        Ok(())
    }

    /// Copies the batch-mean loss of the last step to the host: waits for the GPU.
    pub(crate) fn read_loss(&self) -> Result<f32, ExperimentError> {
        Ok(self.stream.download(&self.loss)?[0])
    }

    /// Copies host batch `x` (FP32 tickets) over the rows that step `step` reads, on
    /// `on` (the run's stream, or a side stream for a prefetch): what a loop that keeps
    /// its data in host memory does every step.
    pub(crate) fn feed(
        &mut self,
        on: &Stream,
        step: usize,
        x: &[f32],
    ) -> Result<(), ExperimentError> {
        let at = ((step * self.batch) % DATASET) * FEATURES;
        on.copy_to_device_at(x, &mut self.x, at)?;
        if self.bf16 {
            let rounded: Vec<f32> = x.iter().map(|v| bf16::from_f32(*v).to_f32()).collect();
            let halves: Vec<bf16> = x.iter().map(|v| bf16::from_f32(*v)).collect();
            on.copy_to_device_at(&rounded, &mut self.x_round, at)?;
            on.copy_to_device_at(&halves, &mut self.x_bf16, at)?;
        }
        Ok(())
    }

    /// Recomputes layer 1 (z1 = x·W1 + b1, a1 = relu(z1)) for step `step`, as
    /// activation checkpointing does in the backward pass (FP32 operands).
    pub(crate) fn recompute_hidden(&mut self, step: usize) -> Result<(), ExperimentError> {
        let (b, h) = (self.batch, self.hidden);
        let first = (step * b) % DATASET;
        self.blas.gemm(
            Operand::new(&self.x, 2 * DATASET, FEATURES).window(first, b),
            Operand::new(&self.params[0], FEATURES, h),
            Output::new(&mut self.z1, b, h),
            Compute::F32,
        )?;
        self.k
            .add_bias(&self.stream, &mut self.z1, &self.params[1], b, h)?;
        self.k.relu(&self.stream, &self.z1, &mut self.a1, b * h)?;
        Ok(())
    }

    fn model(&self) -> Result<Mlp, ExperimentError> {
        let get = |i: usize| self.stream.download(&self.params[i]);
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
fn time_logging(
    gpu: &mut Gpu,
    params: &TrainParams,
    data: &Tickets,
    steps: usize,
    read_every: usize,
    deadline: &Deadline,
) -> Result<f64, ExperimentError> {
    let mut run = DeviceRun::new(gpu, params, data)?;
    run.stream.sync()?;
    let start = Instant::now();
    let mut seen = 0.0f32;
    for step in 0..steps {
        deadline.check()?;
        run.step(step)?;
        if (step + 1) % read_every == 0 {
            seen += run.read_loss()?;
        }
    }
    run.stream.sync()?;
    std::hint::black_box(seen);
    Ok(start.elapsed().as_secs_f64() * 1e3 / steps as f64)
}

/// Trains on the GPU.
pub fn run(
    gpu: &mut Gpu,
    params: &TrainParams,
    deadline: &Deadline,
) -> Result<TrainResult, ExperimentError> {
    let data = Tickets::generate();
    let mut run = DeviceRun::new(gpu, params, &data)?;
    let mut marks = gpu.marks();
    run.stream.sync()?;
    marks.record(&run.stream)?;
    let mut timeline = super::timeline::StepTrace::new(true);
    let mut curve = Vec::new();
    for step in 0..params.steps {
        deadline.check()?;
        let launched = timeline.now_ms();
        run.step(step)?;
        marks.record(&run.stream)?;
        let name = format!("step {} launches", step + 1);
        timeline.host(name, "launch", launched, timeline.now_ms());
        if (step + 1) % params.log_every == 0 || step + 1 == params.steps {
            let asked = timeline.now_ms();
            let loss = run.read_loss()?;
            let name = format!("read loss after step {} (waits for the GPU)", step + 1);
            timeline.host(name, "sync", asked, timeline.now_ms());
            curve.push(LossPoint {
                step: step + 1,
                loss,
            });
        }
    }
    run.stream.sync()?;
    timeline.stream_steps(&marks.offsets_ms()?);
    let step_ms = summarize(&marks.intervals_ms()?)
        .ok_or_else(|| ExperimentError::Failed("the run took no steps".into()))?;
    let probe = params.steps.min(LOGGING_PROBE_STEPS);
    let sparse = params.log_every.min(probe).max(1);
    let (read_every_step_ms, read_every_n_ms) =
        super::logging::best_alternating(sparse, |every| {
            time_logging(gpu, params, &data, probe, every, deadline)
        })?;
    Ok(TrainResult {
        params: params.clone(),
        setup: super::TrainSetup::of(params),
        loss_curve: curve,
        step_ms,
        samples_per_sec: params.batch as f64 / (step_ms.median / 1e3),
        accuracy: accuracy(&run.model()?, &data),
        read_every_step_ms,
        read_every_n_ms,
        trace: timeline.finish(),
    })
}

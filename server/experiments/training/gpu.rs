//! The training run on the GPU: the same MLP, data, initialisation and optimiser as the
//! CPU reference in [`super::model`], step for step, so the two loss curves agree.
//! Every matrix product goes through `gpu::blas`; bias adds, ReLU, the fused softmax
//! cross-entropy, bias gradients, the batch-mean loss and the SGD/Adam updates are our
//! kernels from `kernels/`, through their typed launchers.
//!
//! Mixed precision (`bf16`) keeps FP32 master weights and casts them to BF16 each step;
//! the hidden layer's activations and their gradients are stored in BF16, every GEMM
//! takes BF16 operands with FP32 accumulation, and the weight gradients come out in
//! FP32 ([`super::pass`], which the CPU reference mirrors rounding for rounding). The
//! loss stays on the device until the loop reads it. [`run`] ends with one more step
//! profiled kernel by kernel against this GPU's ceilings ([`super::profile`]).

use std::sync::Arc;
use std::time::Instant;

use half::bf16;

use super::model::{CLASSES, DATASET, FEATURES, LOGGING_PROBE_STEPS, Mlp, Tickets, accuracy};
use super::ops::adam_step;
use super::pass::{self, Head, Hidden, Inputs, Queue};
use super::profile::{self, KernelMarks, KernelProfile, StepShape};
use super::{LossPoint, Optim, TrainParams, TrainPrecision, TrainResult};
use crate::experiments::ExperimentError;
use crate::experiments::precision::Format;
use crate::gpu::{Blas, DeviceBuffer, Gpu, Kernels, Stream, column_chunks};
use crate::measure::{Deadline, summarize};

/// Everything one run keeps on the device (the tuning labs drive it step by step too).
pub(crate) struct DeviceRun {
    pub(crate) stream: Stream,
    blas: Arc<Blas>,
    k: Arc<Kernels>,
    adam: bool,
    lr: f32,
    t: i32,
    batch: usize,
    hidden: usize,
    /// Tickets twice over, so any batch window is contiguous (FP32).
    x: DeviceBuffer<f32>,
    labels: DeviceBuffer<i32>,
    /// W1, b1, W2, b2 (FP32 master weights), their gradients, and Adam's (m, v).
    params: [DeviceBuffer<f32>; 4],
    grads: [DeviceBuffer<f32>; 4],
    moments: [(DeviceBuffer<f32>, DeviceBuffer<f32>); 4],
    /// The hidden layer in the run's precision.
    layer: Layer,
    /// The logits, the loss and the bias gradients' partial sums.
    head: Head,
    /// The running sums of a step's micro-batches, once a lab asks for accumulation.
    accumulated: Option<Accumulated>,
    /// Set for the one profiled step: an event after every launch.
    marks: Option<KernelMarks>,
}

/// The hidden layer and what its precision needs besides (one per run: the BF16
/// variant's size does not matter, and boxing it would only add a pointer hop).
#[allow(clippy::large_enum_variant)]
enum Layer {
    F32(Hidden<f32>),
    Bf16(Bf16Layer),
}

/// BF16 activations, with BF16 copies of the tickets, of W1 and W2 (cast each step)
/// and of the logits' gradient.
struct Bf16Layer {
    hidden: Hidden<bf16>,
    x: DeviceBuffer<bf16>,
    w1: DeviceBuffer<bf16>,
    w2: DeviceBuffer<bf16>,
    dz2: DeviceBuffer<bf16>,
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
        let labels: Vec<i32> = data.y.iter().chain(&data.y).map(|&c| c as i32).collect();
        let model = Mlp::init(h);
        let sizes = [FEATURES * h, h, h * CLASSES, CLASSES];
        let zeros = |n: usize| s.zeros::<f32>(n);
        let layer = if params.precision == TrainPrecision::Bf16 {
            let as_bf16: Vec<bf16> = twice(&data.x).iter().map(|v| bf16::from_f32(*v)).collect();
            Layer::Bf16(Bf16Layer {
                hidden: Hidden::zeros(&s, b, h)?,
                x: s.upload(&as_bf16)?,
                w1: s.zeros(sizes[0])?,
                w2: s.zeros(sizes[2])?,
                dz2: s.zeros(b * CLASSES)?,
            })
        } else {
            Layer::F32(Hidden::zeros(&s, b, h)?)
        };
        Ok(Self {
            x: s.upload(&twice(&data.x))?,
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
            layer,
            head: Head {
                z2: zeros(b * CLASSES)?,
                dz2: zeros(b * CLASSES)?,
                partials: zeros(column_chunks(b) * h.max(CLASSES))?,
                losses: zeros(b)?,
                loss: zeros(1)?,
            },
            accumulated: None,
            marks: None,
            stream: s,
            blas,
            k,
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
        k.sgd(&s, &mut sums.loss, &self.head.loss, share)?;
        if nth + 1 < of {
            return Ok(());
        }
        // The last micro-batch: update from the sums, then clear them.
        std::mem::swap(&mut self.grads, &mut sums.grads);
        s.copy_on_device(&sums.loss, &mut self.head.loss)?;
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
    /// gradient, without touching the weights ([`super::pass`] for the hidden layer).
    fn forward_backward(&mut self, step: usize) -> Result<(), ExperimentError> {
        let (b, h) = (self.batch, self.hidden);
        let (s, k, blas) = (
            self.stream.clone(),
            Arc::clone(&self.k),
            Arc::clone(&self.blas),
        );
        let first = (step * b) % DATASET;
        let mut q = Queue {
            s: &s,
            k: &k,
            blas: &blas,
            first,
            b,
            h,
            marks: &mut self.marks,
        };
        let [w1, b1, w2, b2] = &self.params;
        let [dw1, db1, dw2, db2] = &mut self.grads;
        match &mut self.layer {
            Layer::F32(hidden) => {
                let input = Inputs {
                    x: &self.x,
                    w1,
                    w2,
                    b1,
                };
                let head = &mut self.head;
                pass::forward(&mut q, &input, hidden, head, (b2, &self.labels, db2))?;
                pass::backward(
                    &mut q,
                    &input,
                    hidden,
                    &head.dz2,
                    [dw1, db1, dw2],
                    &mut head.partials,
                )?;
            }
            Layer::Bf16(low) => {
                let Bf16Layer {
                    hidden,
                    x,
                    w1: w1_bf16,
                    w2: w2_bf16,
                    dz2: dz2_bf16,
                } = low;
                k.to_bf16(&s, w1, w1_bf16, FEATURES * h)?;
                q.mark("to_bf16 W1")?;
                k.to_bf16(&s, w2, w2_bf16, h * CLASSES)?;
                q.mark("to_bf16 W2")?;
                let input = Inputs {
                    x,
                    w1: w1_bf16,
                    w2: w2_bf16,
                    b1,
                };
                let head = &mut self.head;
                pass::forward(&mut q, &input, hidden, head, (b2, &self.labels, db2))?;
                k.to_bf16(&s, &head.dz2, dz2_bf16, b * CLASSES)?;
                q.mark("to_bf16 dz2")?;
                pass::backward(
                    &mut q,
                    &input,
                    hidden,
                    dz2_bf16,
                    [dw1, db1, dw2],
                    &mut head.partials,
                )?;
            }
        }
        Ok(())
    }

    fn update(&mut self) -> Result<(), ExperimentError> {
        let (s, k) = (self.stream.clone(), Arc::clone(&self.k));
        self.t += 1;
        let step = adam_step(self.lr, self.t);
        let names = ["update W1", "update b1", "update W2", "update b2"];
        for (((param, grad), (m, v)), name) in self
            .params
            .iter_mut()
            .zip(&self.grads)
            .zip(&mut self.moments)
            .zip(names)
        {
            if self.adam {
                k.adam(&s, param, grad, (m, v), step)?;
            } else {
                k.sgd(&s, param, grad, self.lr)?;
            }
            if let Some(marks) = self.marks.as_mut() {
                marks.after(&s, name)?;
            }
        }
        Ok(())
    }

    /// Copies the batch-mean loss of the last step to the host: waits for the GPU.
    pub(crate) fn read_loss(&self) -> Result<f32, ExperimentError> {
        Ok(self.stream.download(&self.head.loss)?[0])
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
        if let Layer::Bf16(low) = &mut self.layer {
            let halves = &mut low.x;
            // A temporary host buffer: pageable, so the driver has copied it out of
            // this buffer before the call returns.
            let cast: Vec<bf16> = x.iter().map(|v| bf16::from_f32(*v)).collect();
            on.copy_to_device_at(&cast, halves, at)?;
        }
        Ok(())
    }

    /// Recomputes layer 1 (a1 = relu(x·W1 + b1)) for step `step`, as activation
    /// checkpointing does in the backward pass, in the run's precision.
    pub(crate) fn recompute_hidden(&mut self, step: usize) -> Result<(), ExperimentError> {
        let (b, h) = (self.batch, self.hidden);
        let (s, k, blas) = (
            self.stream.clone(),
            Arc::clone(&self.k),
            Arc::clone(&self.blas),
        );
        let mut q = Queue {
            s: &s,
            k: &k,
            blas: &blas,
            first: (step * b) % DATASET,
            b,
            h,
            marks: &mut self.marks,
        };
        let [w1, b1, w2, _] = &self.params;
        match &mut self.layer {
            Layer::F32(hidden) => {
                let input = Inputs {
                    x: &self.x,
                    w1,
                    w2,
                    b1,
                };
                pass::hidden_layer(&mut q, &input, hidden)
            }
            Layer::Bf16(low) => {
                let Bf16Layer {
                    hidden,
                    x,
                    w1: w1_bf16,
                    w2: w2_bf16,
                    ..
                } = low;
                k.to_bf16(&s, w1, w1_bf16, FEATURES * h)?;
                let input = Inputs {
                    x,
                    w1: w1_bf16,
                    w2: w2_bf16,
                    b1,
                };
                pass::hidden_layer(&mut q, &input, hidden)
            }
        }
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
    let accuracy = accuracy(&run.model()?, &data);
    drop(run);
    let probe = params.steps.min(LOGGING_PROBE_STEPS);
    let sparse = params.log_every.min(probe).max(1);
    let (read_every_step_ms, read_every_n_ms) =
        super::logging::best_alternating(sparse, |every| {
            time_logging(gpu, params, &data, probe, every, deadline)
        })?;
    let profiled_at = timeline.now_ms();
    let kernels = profile_step(gpu, params, &data, deadline)?;
    timeline.profiled_step(profiled_at, &kernels);
    Ok(TrainResult {
        params: params.clone(),
        setup: super::TrainSetup::of(params),
        loss_curve: curve,
        step_ms,
        samples_per_sec: params.batch as f64 / (step_ms.median / 1e3),
        accuracy,
        read_every_step_ms,
        read_every_n_ms,
        kernels: Some(kernels),
        trace: timeline.finish(),
    })
}

/// One step of a fresh run, after one unprofiled step (first launches, cuBLAS's
/// choices), with an event after every launch; then this GPU's two ceilings, measured
/// now, and every kernel against them.
fn profile_step(
    gpu: &mut Gpu,
    params: &TrainParams,
    data: &Tickets,
    deadline: &Deadline,
) -> Result<KernelProfile, ExperimentError> {
    let mut run = DeviceRun::new(gpu, params, data)?;
    run.step(0)?;
    run.stream.sync()?;
    run.marks = Some(KernelMarks::start(gpu, &run.stream)?);
    run.step(1)?;
    let times = match run.marks.take() {
        Some(marks) => marks.times()?,
        None => Vec::new(),
    };
    drop(run);
    let bf16 = params.precision == TrainPrecision::Bf16;
    let format = if bf16 { Format::Bf16 } else { Format::Fp32 };
    let ceilings = profile::ceilings_now(gpu, format, deadline)?;
    let shape = StepShape {
        b: params.batch,
        h: params.hidden,
        e: if bf16 { 2 } else { 4 },
        adam: params.optimizer == Optim::Adam,
    };
    profile::assemble(&times, shape, ceilings, gpu.card().sm_count)
}

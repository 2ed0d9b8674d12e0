//! The training run's CPU implementation: the synthetic tickets, the forward and
//! backward pass of the MLP ([`super::mlp`], computed by [`super::step`]), SGD and Adam. This is the reference the GPU path must agree
//! with: the same data, the same initialisation, the same update rules, step for step.

use std::time::Instant;

pub use super::mlp::{CLASSES, FEATURES, Mlp};
use super::ops;
use super::step::Workspace;
use super::{LossPoint, Optim, TrainParams, TrainPrecision, TrainResult};
use crate::cpu::{Mat, gemm};
use crate::measure::{Deadline, summarize};

/// Tickets in the synthetic data set.
pub const DATASET: usize = 4096;
/// Steps of the two extra runs that price reading the loss every step.
pub const LOGGING_PROBE_STEPS: usize = 20;

/// The synthetic tickets: features in [-1, 1) and labels from a fixed teacher rule.
pub struct Tickets {
    /// DATASET × FEATURES, row-major.
    pub x: Vec<f32>,
    /// DATASET labels in 0..3.
    pub y: Vec<usize>,
}

impl Tickets {
    /// The same tickets on every run and every backend.
    pub fn generate() -> Self {
        let x = crate::cpu::random_matrix(DATASET * FEATURES, 11);
        let teacher = crate::cpu::random_matrix(FEATURES * CLASSES, 12);
        let y = (0..DATASET)
            .map(|i| {
                let row = &x[i * FEATURES..(i + 1) * FEATURES];
                let score = |c: usize| {
                    (0..FEATURES)
                        .map(|f| row[f] * teacher[f * CLASSES + c])
                        .sum::<f32>()
                };
                (0..CLASSES)
                    .max_by(|a, b| score(*a).total_cmp(&score(*b)))
                    .unwrap_or(0)
            })
            .collect();
        Self { x, y }
    }

    /// Batch `step`: `batch` consecutive tickets, wrapping around.
    pub fn batch(&self, step: usize, batch: usize) -> (Vec<f32>, Vec<usize>) {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        self.batch_into(step, batch, &mut x, &mut y);
        (x, y)
    }

    /// [`Tickets::batch`] into buffers kept from step to step.
    pub fn batch_into(&self, step: usize, batch: usize, x: &mut Vec<f32>, y: &mut Vec<usize>) {
        let start = (step * batch) % DATASET;
        x.clear();
        y.clear();
        for i in (0..batch).map(|i| (start + i) % DATASET) {
            x.extend_from_slice(&self.x[i * FEATURES..(i + 1) * FEATURES]);
            y.push(self.y[i]);
        }
    }
}

/// Loss and gradients (same order as [`Mlp::tensors_mut`]) for one batch, in fresh
/// buffers; a run reuses one [`Workspace`] instead.
pub fn loss_and_grads(model: &Mlp, x: &[f32], y: &[usize], bf16_ops: bool) -> (f32, [Vec<f32>; 4]) {
    let mut work = Workspace::default();
    let loss = work.loss_and_grads(model, x, y, bf16_ops);
    (loss, work.into_grads())
}

/// SGD or Adam state.
pub struct Optimizer {
    adam: bool,
    lr: f32,
    t: i32,
    m: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
}

impl Optimizer {
    /// Fresh state for `model`.
    pub fn new(params: &TrainParams, model: &Mlp) -> Self {
        let zeros = || {
            vec![
                vec![0.0; model.w1.len()],
                vec![0.0; model.b1.len()],
                vec![0.0; model.w2.len()],
                vec![0.0; model.b2.len()],
            ]
        };
        Self {
            adam: params.optimizer == Optim::Adam,
            lr: params.lr(),
            t: 0,
            m: zeros(),
            v: zeros(),
        }
    }

    /// One update of `model` with `grads`.
    pub fn step(&mut self, model: &mut Mlp, grads: &[Vec<f32>; 4]) {
        self.t += 1;
        // Element-wise, so vector instructions give the same bits as scalar ones.
        pulp::Arch::new().dispatch(Update {
            opt: self,
            model,
            grads,
        });
    }
}

/// [`Optimizer::step`]'s loops, compiled for the CPU's vector instructions.
struct Update<'a> {
    opt: &'a mut Optimizer,
    model: &'a mut Mlp,
    grads: &'a [Vec<f32>; 4],
}

impl pulp::WithSimd for Update<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        let Optimizer { adam, lr, t, m, v } = self.opt;
        let step = ops::adam_step(*lr, *t);
        for (k, param) in self.model.tensors_mut().into_iter().enumerate() {
            if *adam {
                ops::adam_update(param, &self.grads[k], &mut m[k], &mut v[k], step);
            } else {
                ops::sgd_update(param, &self.grads[k], *lr);
            }
        }
    }
}

/// Trains on the CPU.
pub fn run_cpu(
    params: &TrainParams,
    deadline: &Deadline,
) -> Result<TrainResult, super::ExperimentError> {
    let data = Tickets::generate();
    let bf16_ops = params.precision == TrainPrecision::Bf16;
    let mut model = Mlp::init(params.hidden);
    let mut opt = Optimizer::new(params, &model);
    let mut curve = Vec::new();
    let mut step_times = Vec::with_capacity(params.steps);
    let mut timeline = super::timeline::StepTrace::new(false);
    let (mut work, mut x, mut y) = (Workspace::default(), Vec::new(), Vec::new());
    for step in 0..params.steps {
        deadline.check()?;
        let start = Instant::now();
        let begun_ms = timeline.now_ms();
        data.batch_into(step, params.batch, &mut x, &mut y);
        let loss = work.loss_and_grads(&model, &x, &y, bf16_ops);
        opt.step(&mut model, work.grads());
        let ms = start.elapsed().as_secs_f64() * 1e3;
        step_times.push(ms);
        timeline.host(
            format!("step {}", step + 1),
            "work",
            begun_ms,
            begun_ms + ms,
        );
        if (step + 1) % params.log_every == 0 || step + 1 == params.steps {
            curve.push(LossPoint {
                step: step + 1,
                loss,
            });
        }
    }
    let step_ms = summarize(&step_times)
        .ok_or_else(|| super::ExperimentError::Failed("the run took no steps".into()))?;
    // On the CPU the loss is already a host number, so reading it costs nothing extra:
    // measure both logging styles anyway, as on the GPU, and report what was measured.
    let probe = params.steps.min(LOGGING_PROBE_STEPS);
    // The probes reuse the run's buffers, as its steps do.
    let mut timed = |read_every: usize| {
        let mut m = Mlp::init(params.hidden);
        let mut o = Optimizer::new(params, &m);
        let start = Instant::now();
        let mut seen = 0.0f32;
        for step in 0..probe {
            data.batch_into(step, params.batch, &mut x, &mut y);
            let loss = work.loss_and_grads(&m, &x, &y, bf16_ops);
            o.step(&mut m, work.grads());
            if (step + 1) % read_every == 0 {
                seen += std::hint::black_box(loss);
            }
        }
        std::hint::black_box(seen);
        start.elapsed().as_secs_f64() * 1e3 / probe as f64
    };
    // Alternate the two styles and keep each one's fastest probe (`logging`).
    let sparse = params.log_every.min(probe).max(1);
    let (read_every_step_ms, read_every_n_ms) = super::logging::best_alternating::<
        std::convert::Infallible,
    >(sparse, |every| Ok(timed(every)))
    .unwrap_or_else(|never| match never {});
    Ok(TrainResult {
        params: params.clone(),
        setup: super::TrainSetup::of(params),
        loss_curve: curve,
        samples_per_sec: params.batch as f64 / (step_ms.median / 1e3),
        step_ms,
        accuracy: accuracy(&model, &data),
        read_every_step_ms,
        read_every_n_ms,
        kernels: None,
        trace: timeline.finish(),
    })
}

/// The selftest's finite-difference check of the CPU backward pass: the reference
/// every GPU gradient is compared with must itself be right.
pub fn gradient_check() -> crate::experiments::Check {
    let data = Tickets::generate();
    let model = Mlp::init(6);
    let (x, y) = data.batch(3, 5);
    let (_, grads) = loss_and_grads(&model, &x, &y, false);
    let eps = 1e-2f32;
    let mut worst = (0.0f32, String::new());
    let mut ok = true;
    for (k, i) in [(0, 0), (0, 17), (1, 2), (2, 5), (2, 11), (3, 1)] {
        let mut plus = model.clone();
        plus.tensors_mut()[k][i] += eps;
        let mut minus = model.clone();
        minus.tensors_mut()[k][i] -= eps;
        let numeric = (loss_and_grads(&plus, &x, &y, false).0
            - loss_and_grads(&minus, &x, &y, false).0)
            / (2.0 * eps);
        let analytic = grads[k][i];
        let gap = (numeric - analytic).abs();
        ok &= gap <= 2e-3 + 0.05 * analytic.abs();
        if gap >= worst.0 {
            worst = (
                gap,
                format!("tensor {k}[{i}]: numeric {numeric:.5} vs analytic {analytic:.5}"),
            );
        }
    }
    crate::experiments::Check::expect(
        "training: CPU gradients vs finite differences",
        ok,
        format!("largest gap at {}", worst.1),
    )
}

/// Share of the synthetic tickets the model classifies correctly.
pub fn accuracy(model: &Mlp, data: &Tickets) -> f64 {
    let h = model.hidden;
    let mut z1 = vec![0.0; DATASET * h];
    gemm(
        Mat::new(&data.x, DATASET, FEATURES),
        Mat::new(&model.w1, FEATURES, h),
        0.0,
        &mut z1,
    );
    let a1: Vec<f32> = z1
        .chunks(h)
        .flat_map(|row| {
            row.iter()
                .zip(&model.b1)
                .map(|(z, b)| (z + b).max(0.0))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut z2 = vec![0.0; DATASET * CLASSES];
    gemm(
        Mat::new(&a1, DATASET, h),
        Mat::new(&model.w2, h, CLASSES),
        0.0,
        &mut z2,
    );
    let correct = (0..DATASET)
        .filter(|&i| {
            let logit = |c: usize| z2[i * CLASSES + c] + model.b2[c];
            (0..CLASSES).max_by(|a, b| logit(*a).total_cmp(&logit(*b))) == Some(data.y[i])
        })
        .count();
    correct as f64 / DATASET as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn params(optimizer: Optim, precision: TrainPrecision, steps: usize) -> TrainParams {
        TrainParams {
            batch: 64,
            hidden: 32,
            steps,
            log_every: 10,
            precision,
            optimizer,
        }
    }

    #[test]
    fn gradients_match_finite_differences() {
        let check = gradient_check();
        assert!(!check.failed(), "{check:?}");
    }

    #[test]
    fn training_lowers_the_loss_for_every_optimizer_and_precision() {
        for (opt, prec) in [
            (Optim::Adam, TrainPrecision::Fp32),
            (Optim::Sgd, TrainPrecision::Fp32),
            (Optim::Adam, TrainPrecision::Bf16),
        ] {
            let r = run_cpu(
                &params(opt, prec, 150),
                &Deadline::after(Duration::from_secs(60)),
            )
            .unwrap();
            let (first, last) = (r.loss_curve[0].loss, r.loss_curve.last().unwrap().loss);
            assert!(
                last < first * 0.8,
                "{opt:?}/{prec:?}: loss {first} -> {last}"
            );
            assert!(
                r.accuracy > 0.6,
                "{opt:?}/{prec:?}: accuracy {}",
                r.accuracy
            );
            assert_eq!(r.loss_curve.len(), 15);
            assert!(r.samples_per_sec > 0.0);
        }
    }
}

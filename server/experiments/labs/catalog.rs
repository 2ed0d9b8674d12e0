//! The five tuning labs as data: for each, the knobs a learner may turn, the slow
//! baseline it starts from, the known-good settings (its reference, run beside the
//! candidate so the target fits this backend), the nominal targets and the lesson
//! sections that teach each knob. Everything the panel, the fallback text, the grader
//! and the gradebook say about a lab is read from here.

use serde::{Deserialize, Serialize};

use crate::experiments::training::{Optim, TrainPrecision};

/// Which lab.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, Serialize, utoipa::ToSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum LabId {
    /// Lessons 4 and 6: keep the data where the compute is.
    #[default]
    FeedTheGpu,
    /// Lessons 5 and 9: read the loss every N steps; time with a sync.
    StopWaiting,
    /// Lesson 7: peak reserved memory under a budget.
    FitTheBudget,
    /// Lesson 8: BF16 mixed precision, loss within 2% of FP32's.
    MixedPrecision,
    /// Lesson 9: four pitfalls at once.
    SlowLoopDoctor,
}

impl LabId {
    /// The API's name: `feed-the-gpu` ….
    pub fn name(self) -> &'static str {
        match self {
            Self::FeedTheGpu => "feed-the-gpu",
            Self::StopWaiting => "stop-waiting",
            Self::FitTheBudget => "fit-the-budget",
            Self::MixedPrecision => "mixed-precision",
            Self::SlowLoopDoctor => "slow-loop-doctor",
        }
    }
}

/// Every lab, in course order.
pub const ALL: [LabId; 5] = [
    LabId::FeedTheGpu,
    LabId::StopWaiting,
    LabId::FitTheBudget,
    LabId::MixedPrecision,
    LabId::SlowLoopDoctor,
];

/// A knob a learner may turn (the name is the parameter's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// Tickets per optimiser step.
    Batch,
    /// The data set copied to the device once, batches read in place.
    DataOnDevice,
    /// The host batch in page-locked memory.
    Pinned,
    /// The copy queued asynchronously, the next batch prefetched on a side stream.
    NonBlocking,
    /// Read the loss every this many steps.
    LogEvery,
    /// Synchronise before reading the host clock of the step timer.
    TimerSync,
    /// FP32 or BF16 mixed precision.
    Precision,
    /// SGD or Adam.
    Optimizer,
    /// Micro-batches per optimiser step (gradient accumulation).
    Accumulation,
    /// Recompute layer 1's activations in the backward pass instead of keeping them.
    Recompute,
}

impl Knob {
    /// The parameter's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Batch => "batch",
            Self::DataOnDevice => "data_on_device",
            Self::Pinned => "pinned",
            Self::NonBlocking => "non_blocking",
            Self::LogEvery => "log_every",
            Self::TimerSync => "timer_sync",
            Self::Precision => "precision",
            Self::Optimizer => "optimizer",
            Self::Accumulation => "accumulation",
            Self::Recompute => "recompute",
        }
    }

    /// The knob in words, as a lab's description lists it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Batch => "batch size",
            Self::DataOnDevice => "data set kept on the device",
            Self::Pinned => "pinned host memory",
            Self::NonBlocking => "non-blocking copies with prefetch",
            Self::LogEvery => "how often the loss is read",
            Self::TimerSync => "a sync before the step timer",
            Self::Precision => "precision",
            Self::Optimizer => "optimizer",
            Self::Accumulation => "gradient accumulation",
            Self::Recompute => "recomputing layer 1",
        }
    }

    /// This knob as set in `k`, in words (`None` for a switch that is off).
    pub fn setting_in(self, k: &Knobs) -> Option<String> {
        let on = |b: bool, words: &str| b.then(|| words.to_string());
        match self {
            Self::Batch => Some(format!("batch size {}", k.batch)),
            Self::DataOnDevice => on(k.data_on_device, "the data set kept on the device"),
            Self::Pinned => on(k.pinned, "pinned host memory"),
            Self::NonBlocking => on(k.non_blocking, "non-blocking copies with prefetch"),
            Self::LogEvery => Some(format!("the loss read every {} steps", k.log_every)),
            Self::TimerSync => on(k.timer_sync, "a sync before the step timer"),
            Self::Precision => Some(format!("{} precision", k.precision.name().to_uppercase())),
            Self::Optimizer => Some(match k.optimizer {
                Optim::Sgd => "SGD".to_string(),
                Optim::Adam => "Adam".to_string(),
            }),
            Self::Accumulation => Some(format!("{} micro-batches per step", k.accumulation)),
            Self::Recompute => on(k.recompute, "layer 1 recomputed in the backward pass"),
        }
    }

    /// Whether the knob changes nothing on the CPU backend, and why.
    pub fn cpu_inert(self) -> Option<&'static str> {
        match self {
            Self::Pinned => Some("page-locked memory matters only to a GPU's DMA engine"),
            Self::NonBlocking => {
                Some("there is no copy engine to overlap with: the CPU copies and computes")
            }
            _ => None,
        }
    }
}

/// One setting of every knob: a baseline, a reference or a learner's candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Knobs {
    /// Tickets per optimiser step.
    pub batch: usize,
    /// Hidden width (fixed by the lab, not a knob).
    pub hidden: usize,
    /// Data set resident on the device.
    pub data_on_device: bool,
    /// Host batch page-locked.
    pub pinned: bool,
    /// Asynchronous copy with the next batch prefetched.
    pub non_blocking: bool,
    /// Loss read every this many steps.
    pub log_every: usize,
    /// Step timer synchronises first.
    pub timer_sync: bool,
    /// Arithmetic.
    pub precision: TrainPrecision,
    /// Optimiser.
    pub optimizer: Optim,
    /// Micro-batches per optimiser step.
    pub accumulation: usize,
    /// Layer-1 activations recomputed in the backward pass.
    pub recompute: bool,
}

/// The slow loop every lab starts from, before its own changes.
pub const SLOW: Knobs = Knobs {
    batch: 16,
    hidden: 256,
    data_on_device: false,
    pinned: false,
    non_blocking: false,
    log_every: 1,
    timer_sync: false,
    precision: TrainPrecision::Fp32,
    optimizer: Optim::Adam,
    accumulation: 1,
    recompute: false,
};

/// A lab's definition.
#[derive(Debug, Clone, Copy)]
pub struct Lab {
    /// Which.
    pub id: LabId,
    /// Its title.
    pub title: &'static str,
    /// The lesson whose end shows its panel.
    pub lesson: &'static str,
    /// What the learner may turn, with the section of the lesson that teaches it.
    pub knobs: &'static [(Knob, &'static str)],
    /// Where it starts.
    pub baseline: Knobs,
    /// Known-good settings: run beside the candidate to size the target here.
    pub reference: Knobs,
    /// Speed target (candidate ÷ baseline samples/s), where the backend allows it;
    /// `None`: speed is a floor, not a goal ([`Lab::speed_floor`]).
    pub speedup: Option<f64>,
    /// Lowest share of the baseline's samples/s a candidate may fall to.
    pub speed_floor: Option<f64>,
    /// Peak reserved memory must stay under this share of the baseline's.
    pub memory_share: Option<f64>,
    /// The final loss must be within this share of the baseline's.
    pub loss_within: Option<f64>,
    /// The step timer must read within this share of the true step time.
    pub timer_within: Option<f64>,
    /// Timed steps per run.
    pub steps: usize,
}

/// The lab called `id`.
pub fn lab(id: LabId) -> Lab {
    let none = Lab {
        id,
        title: "",
        lesson: "",
        knobs: &[],
        baseline: SLOW,
        reference: SLOW,
        speedup: None,
        speed_floor: None,
        memory_share: None,
        loss_within: None,
        timer_within: None,
        steps: 60,
    };
    match id {
        LabId::FeedTheGpu => Lab {
            title: "Feed the GPU",
            lesson: "training-step",
            knobs: &[
                (Knob::DataOnDevice, "/lessons/where-tensors-live"),
                (Knob::Pinned, "/lessons/where-tensors-live"),
                (Knob::NonBlocking, "/lessons/where-tensors-live"),
                (Knob::Batch, "/lessons/training-step"),
            ],
            reference: Knobs {
                batch: 256,
                data_on_device: true,
                pinned: true,
                non_blocking: true,
                ..SLOW
            },
            speedup: Some(3.0),
            ..none
        },
        LabId::StopWaiting => Lab {
            title: "Stop waiting on the loss",
            lesson: "async-and-timing",
            knobs: &[
                (Knob::LogEvery, "/lessons/slow-or-broken"),
                (Knob::TimerSync, "/lessons/async-and-timing"),
            ],
            baseline: Knobs { batch: 64, ..SLOW },
            reference: Knobs {
                batch: 64,
                log_every: 50,
                timer_sync: true,
                ..SLOW
            },
            speedup: Some(1.25),
            timer_within: Some(0.10),
            ..none
        },
        LabId::FitTheBudget => {
            let big = Knobs {
                batch: 1024,
                hidden: 1024,
                data_on_device: true,
                log_every: 10,
                ..SLOW
            };
            Lab {
                title: "Fit the budget",
                lesson: "gpu-memory",
                knobs: &[
                    (Knob::Accumulation, "/lessons/gpu-memory"),
                    (Knob::Precision, "/lessons/mixed-precision"),
                    (Knob::Optimizer, "/lessons/gpu-memory"),
                    (Knob::Recompute, "/lessons/gpu-memory"),
                ],
                baseline: big,
                reference: Knobs {
                    accumulation: 4,
                    ..big
                },
                speed_floor: Some(0.5),
                memory_share: Some(0.6),
                steps: 6,
                ..none
            }
        }
        LabId::MixedPrecision => {
            let gemm_heavy = Knobs {
                batch: 256,
                hidden: 1024,
                data_on_device: true,
                log_every: 10,
                ..SLOW
            };
            Lab {
                title: "Mixed precision",
                lesson: "mixed-precision",
                knobs: &[(Knob::Precision, "/lessons/mixed-precision")],
                baseline: gemm_heavy,
                reference: Knobs {
                    precision: TrainPrecision::Bf16,
                    ..gemm_heavy
                },
                speedup: Some(1.5),
                loss_within: Some(0.02),
                steps: 12,
                ..none
            }
        }
        LabId::SlowLoopDoctor => Lab {
            title: "Slow loop doctor",
            lesson: "slow-or-broken",
            knobs: &[
                (Knob::LogEvery, "/lessons/slow-or-broken"),
                (Knob::Batch, "/lessons/training-step"),
                (Knob::DataOnDevice, "/lessons/where-tensors-live"),
                (Knob::Pinned, "/lessons/where-tensors-live"),
                (Knob::Precision, "/lessons/mixed-precision"),
            ],
            baseline: Knobs { batch: 8, ..SLOW },
            reference: Knobs {
                batch: 256,
                data_on_device: true,
                pinned: true,
                log_every: 50,
                precision: TrainPrecision::Bf16,
                ..SLOW
            },
            speedup: Some(4.0),
            ..none
        },
    }
}

impl Lab {
    /// The lab's knobs as set in `k`, in words: "batch size 256, the data set kept on
    /// the device, pinned host memory" (switches that are off are left out).
    pub fn setting_text(&self, k: &Knobs) -> String {
        let parts: Vec<String> = self
            .knobs
            .iter()
            .filter_map(|(knob, _)| knob.setting_in(k))
            .collect();
        parts.join(", ")
    }

    /// Whether the learner may turn `knob` in this lab.
    pub fn has(&self, knob: Knob) -> bool {
        self.knobs.iter().any(|(k, _)| *k == knob)
    }

    /// The reference as run on the CPU backend: FP32 where BF16 is only emulated (our
    /// CPU GEMM has no BF16 path, so BF16 there is FP32 plus rounding passes) unless
    /// precision is what the lab is about.
    pub fn cpu_reference(&self) -> Knobs {
        let mut r = self.reference;
        if self.id != LabId::MixedPrecision && self.id != LabId::FitTheBudget {
            r.precision = TrainPrecision::Fp32;
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_labs_api_name_is_its_serde_name() {
        for id in ALL {
            assert_eq!(serde_json::to_value(id).unwrap(), id.name());
        }
    }

    #[test]
    fn every_lab_differs_from_its_baseline_only_in_its_own_knobs() {
        for id in ALL {
            let lab = lab(id);
            assert!(!lab.title.is_empty() && !lab.knobs.is_empty(), "{id:?}");
            let (b, r) = (lab.baseline, lab.reference);
            assert_ne!(b, r, "{id:?}: the reference changes something");
            let changed = [
                (Knob::Batch, b.batch != r.batch),
                (Knob::DataOnDevice, b.data_on_device != r.data_on_device),
                (Knob::Pinned, b.pinned != r.pinned),
                (Knob::NonBlocking, b.non_blocking != r.non_blocking),
                (Knob::LogEvery, b.log_every != r.log_every),
                (Knob::TimerSync, b.timer_sync != r.timer_sync),
                (Knob::Precision, b.precision != r.precision),
                (Knob::Optimizer, b.optimizer != r.optimizer),
                (Knob::Accumulation, b.accumulation != r.accumulation),
                (Knob::Recompute, b.recompute != r.recompute),
            ];
            for (knob, differs) in changed {
                assert!(
                    !differs || lab.has(knob),
                    "{id:?}: {knob:?} is not its knob"
                );
            }
            assert_eq!(b.hidden, r.hidden, "{id:?}: hidden width is fixed");
            assert!(r.batch.is_multiple_of(r.accumulation));
        }
    }
}

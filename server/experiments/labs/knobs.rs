//! The knobs of the tuning labs: which a learner may turn ([`Knob`], each with its name
//! in words and the value it takes), one setting of all of them ([`Knobs`]: a baseline,
//! a lab's known-good reference or a learner's candidate), and the slow loop every lab
//! starts from ([`SLOW`]). The labs themselves, which knobs each opens and what each
//! asks for, are in [`super::catalog`].

use serde::{Deserialize, Serialize};

use crate::experiments::training::{Optim, TrainPrecision};

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

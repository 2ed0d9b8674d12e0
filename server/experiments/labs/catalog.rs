//! The five tuning labs as data: for each, the knobs a learner may turn, the slow
//! baseline it starts from, the known-good settings (its reference, run beside the
//! candidate so the target fits this backend), the nominal targets and the lesson
//! sections that teach each knob. Everything the panel, the fallback text, the grader
//! and the gradebook say about a lab is read from here; the knobs themselves, and the
//! slow loop every lab starts from, are in [`super::knobs`].

use serde::{Deserialize, Serialize};

use super::knobs::{Knob, Knobs, SLOW};
use crate::experiments::training::TrainPrecision;

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
    /// Batch and width on a GPU, where they differ from the CPU's: sized so the GPU's
    /// own work per step is what the lab's knob changes (see each lab's reasons).
    pub gpu_size: Option<(usize, usize)>,
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
        gpu_size: None,
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
            // A loss read every step costs what the host does between the read and the
            // next step reaching the GPU — gathering and copying the batch, launching —
            // while the GPU idles: per step (host + GPU) against max(host, GPU) without
            // it. That pays most when the GPU's step is about as long as the host's. At
            // batch 64 and width 256 an H200's step is a few tens of µs against ~130 µs
            // of host work (1.07× on 2026-11-28); at 4,096 × 2,048 its step (about 0.34
            // GB of memory traffic in FP32) is of the host's order.
            gpu_size: Some((4096, 2048)),
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
                // With 32 inputs and 3 classes every product is thin: the step is bound
                // by the bytes it moves through the hidden layer (about 40 per element
                // in FP32), not by arithmetic, so BF16 pays by halving those bytes, and
                // only where they are the time. At 256 × 1,024 an H200's step is its
                // ~20 launches (BF16 0.86× on 2026-11-28, with FP32 activations then);
                // at batch 4,096 (the whole data set) and width 8,192 it moves 1.3 GB
                // in FP32, ~0.3 ms at 4.25 TB/s.
                gpu_size: Some((4096, 8192)),
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
    /// The lab as run on a GPU: its baseline and reference at [`Lab::gpu_size`], when
    /// it has one.
    pub fn on_gpu(&self) -> Lab {
        Lab {
            baseline: self.sized_for_gpu(self.baseline),
            reference: self.sized_for_gpu(self.reference),
            ..*self
        }
    }

    /// `k` at the lab's GPU batch and width, when it has them (a learner's batch knob,
    /// where the lab offers one, is kept).
    pub fn sized_for_gpu(&self, mut k: Knobs) -> Knobs {
        if let Some((batch, hidden)) = self.gpu_size {
            if !self.has(Knob::Batch) {
                k.batch = batch;
            }
            k.hidden = hidden;
        }
        k
    }

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

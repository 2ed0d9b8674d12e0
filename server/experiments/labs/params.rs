//! What a learner submits to a tuning lab ([`LabParams`]): the lab and a value for
//! every knob, of which the lab reads only its own ([`LabParams::candidate`]); also the
//! parameters that ask for a lab's baseline or its known-good settings, and a class
//! round's caption for them.

use serde::{Deserialize, Serialize};

use super::catalog::{LabId, lab};
use super::knobs::{Knob, Knobs};
use crate::experiments::training::{Optim, TrainPrecision};

/// What the learner submits: the lab and its knobs. Knobs the lab does not offer are
/// ignored (the lab's baseline value is used and the result says so). A knob left out
/// takes *the named lab's* baseline value, so `{"lab": "fit-the-budget"}` asks for that
/// lab's slow loop, not another lab's; a body without `lab` is feed-the-gpu's.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
// `default` and `deny_unknown_fields` are for the OpenAPI schema (no field required, no
// other field allowed); `Submitted` does the reading.
#[serde(from = "Submitted", default, deny_unknown_fields)]
pub struct LabParams {
    /// `feed-the-gpu`, `stop-waiting`, `fit-the-budget`, `mixed-precision` or
    /// `slow-loop-doctor`.
    pub lab: LabId,
    /// Tickets per optimiser step.
    pub batch: usize,
    /// Keep the data set on the device and read batches in place.
    pub data_on_device: bool,
    /// Stage host batches in page-locked memory.
    pub pinned: bool,
    /// Copy asynchronously, prefetching the next batch on a side stream.
    pub non_blocking: bool,
    /// Read the loss every this many steps.
    pub log_every: usize,
    /// Synchronise before the step timer reads the clock.
    pub timer_sync: bool,
    /// `fp32` or `bf16`.
    pub precision: TrainPrecision,
    /// `sgd` or `adam`.
    pub optimizer: Optim,
    /// Micro-batches per optimiser step (gradient accumulation).
    pub accumulation: usize,
    /// Recompute layer 1's activations in the backward pass.
    pub recompute: bool,
}

impl Default for LabParams {
    fn default() -> Self {
        Self::baseline_of(LabId::FeedTheGpu)
    }
}

/// A body as sent, every field optional (but not `null`); unknown fields are refused by
/// name.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Submitted {
    #[serde(default, deserialize_with = "given")]
    lab: Option<LabId>,
    #[serde(default, deserialize_with = "given")]
    batch: Option<usize>,
    #[serde(default, deserialize_with = "given")]
    data_on_device: Option<bool>,
    #[serde(default, deserialize_with = "given")]
    pinned: Option<bool>,
    #[serde(default, deserialize_with = "given")]
    non_blocking: Option<bool>,
    #[serde(default, deserialize_with = "given")]
    log_every: Option<usize>,
    #[serde(default, deserialize_with = "given")]
    timer_sync: Option<bool>,
    #[serde(default, deserialize_with = "given")]
    precision: Option<TrainPrecision>,
    #[serde(default, deserialize_with = "given")]
    optimizer: Option<Optim>,
    #[serde(default, deserialize_with = "given")]
    accumulation: Option<usize>,
    #[serde(default, deserialize_with = "given")]
    recompute: Option<bool>,
}

/// A field that is there holds a value: `null` is refused as the wrong type, as the
/// other experiments' parameters refuse it.
fn given<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

impl From<Submitted> for LabParams {
    fn from(s: Submitted) -> Self {
        let base = LabParams::baseline_of(s.lab.unwrap_or(LabId::FeedTheGpu));
        LabParams {
            lab: base.lab,
            batch: s.batch.unwrap_or(base.batch),
            data_on_device: s.data_on_device.unwrap_or(base.data_on_device),
            pinned: s.pinned.unwrap_or(base.pinned),
            non_blocking: s.non_blocking.unwrap_or(base.non_blocking),
            log_every: s.log_every.unwrap_or(base.log_every),
            timer_sync: s.timer_sync.unwrap_or(base.timer_sync),
            precision: s.precision.unwrap_or(base.precision),
            optimizer: s.optimizer.unwrap_or(base.optimizer),
            accumulation: s.accumulation.unwrap_or(base.accumulation),
            recompute: s.recompute.unwrap_or(base.recompute),
        }
    }
}

impl LabParams {
    /// The parameters that ask for `id`'s baseline itself.
    pub fn baseline_of(id: LabId) -> Self {
        Self::of(id, &lab(id).baseline)
    }

    /// The parameters that ask for `id`'s known-good settings on this backend (what a
    /// class round runs for the whole class).
    pub fn reference_of(id: LabId, on_gpu: bool) -> Self {
        let l = lab(id);
        Self::of(
            id,
            &if on_gpu {
                l.reference
            } else {
                l.cpu_reference()
            },
        )
    }

    /// The parameters that ask for lab `id` with the knobs of `k`.
    pub fn of(id: LabId, k: &Knobs) -> Self {
        Self {
            lab: id,
            batch: k.batch,
            data_on_device: k.data_on_device,
            pinned: k.pinned,
            non_blocking: k.non_blocking,
            log_every: k.log_every,
            timer_sync: k.timer_sync,
            precision: k.precision,
            optimizer: k.optimizer,
            accumulation: k.accumulation,
            recompute: k.recompute,
        }
    }

    /// A class round's caption for a round that runs these parameters.
    pub fn round_title(&self) -> String {
        let l = lab(self.lab);
        format!(
            "Tuning lab “{}” with {}, against its slow loop",
            l.title,
            l.setting_text(&self.candidate())
        )
    }

    /// The candidate: the lab's baseline with the lab's own knobs taken from here.
    pub fn candidate(&self) -> Knobs {
        let l = lab(self.lab);
        let mut k = l.baseline;
        let take = |knob| l.has(knob);
        if take(Knob::Batch) {
            k.batch = self.batch;
        }
        if take(Knob::DataOnDevice) {
            k.data_on_device = self.data_on_device;
        }
        if take(Knob::Pinned) {
            k.pinned = self.pinned;
        }
        if take(Knob::NonBlocking) {
            k.non_blocking = self.non_blocking;
        }
        if take(Knob::LogEvery) {
            k.log_every = self.log_every;
        }
        if take(Knob::TimerSync) {
            k.timer_sync = self.timer_sync;
        }
        if take(Knob::Precision) {
            k.precision = self.precision;
        }
        if take(Knob::Optimizer) {
            k.optimizer = self.optimizer;
        }
        if take(Knob::Accumulation) {
            k.accumulation = self.accumulation;
        }
        if take(Knob::Recompute) {
            k.recompute = self.recompute;
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_knob_left_out_takes_the_named_labs_baseline_and_an_unknown_one_is_refused() {
        for id in super::super::catalog::ALL {
            let body = serde_json::json!({ "lab": id });
            let got: LabParams = serde_json::from_value(body).unwrap();
            assert_eq!(got.candidate(), lab(id).baseline, "{}", id.name());
            assert_eq!(got.lab, id);
        }
        // Each lab's baseline differs from feed-the-gpu's somewhere, or this proves little.
        let budget = lab(LabId::FitTheBudget).baseline;
        assert_ne!(budget, lab(LabId::FeedTheGpu).baseline);
        let partial: LabParams = serde_json::from_value(
            serde_json::json!({ "lab": "fit-the-budget", "recompute": true }),
        )
        .unwrap();
        assert!(partial.recompute);
        assert_eq!(partial.batch, budget.batch);
        let null = serde_json::from_value::<LabParams>(serde_json::json!({ "lab": null }));
        assert!(null.is_err(), "null is not a lab");
        let unknown = serde_json::from_value::<LabParams>(serde_json::json!({ "batchh": 8 }));
        assert!(unknown.unwrap_err().to_string().contains("batchh"));
    }

    #[test]
    fn a_round_runs_the_known_good_settings_and_names_them() {
        let on_cpu = LabParams::reference_of(LabId::SlowLoopDoctor, false);
        assert_eq!(
            on_cpu.candidate(),
            lab(LabId::SlowLoopDoctor).cpu_reference()
        );
        let on_gpu = LabParams::reference_of(LabId::SlowLoopDoctor, true);
        assert_eq!(on_gpu.candidate(), lab(LabId::SlowLoopDoctor).reference);
        assert_eq!(
            on_gpu.round_title(),
            "Tuning lab “Slow loop doctor” with the loss read every 50 steps, batch size 256, \
             the data set kept on the device, pinned host memory, BF16 precision, against its slow loop"
        );
        assert!(on_cpu.round_title().contains("FP32 precision"));
    }
}

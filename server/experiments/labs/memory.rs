//! "Fit the budget": the peak memory a lab setting reserves, through the model of
//! PyTorch's caching allocator (`crate::playground::allocator`). Two training steps
//! (the second is where Adam's moments already exist) are replayed as the tensor
//! allocations and frees PyTorch's autograd makes for this MLP, and the largest
//! `memory_reserved()` along the way is the figure graded against the budget. The same
//! figure holds on either backend: it is a property of the setting, not of the box.

use crate::experiments::training::model::{CLASSES, FEATURES};
use crate::experiments::training::{Optim, TrainPrecision};
use crate::playground::allocator::{AllocConf, Allocator, Chunk, Driver};

use super::knobs::Knobs;

/// A device with no limit of its own (the budget is graded, not enforced).
struct Unlimited;

impl Driver for Unlimited {
    fn map(&mut self, _: Chunk, _: u64) -> bool {
        true
    }
    fn unmap(&mut self, _: Chunk) {}
}

/// Peak and end-of-step figures of one setting, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct MemoryProfile {
    /// Largest `memory_reserved()` over two steps.
    pub peak_reserved: u64,
    /// Largest `memory_allocated()` over two steps.
    pub peak_allocated: u64,
    /// Weights, gradients and optimiser state (what stays between steps).
    pub state_bytes: u64,
}

/// The allocation sequence of two steps with `k`, replayed through the allocator model.
pub fn profile(k: &Knobs) -> MemoryProfile {
    let mut a = Allocator::new(AllocConf::default(), u64::MAX);
    let mut peak = (0u64, 0u64);
    let f = FEATURES as u64;
    let h = k.hidden as u64;
    let c = CLASSES as u64;
    let micro = (k.batch / k.accumulation.max(1)) as u64;
    let act = if k.precision == TrainPrecision::Bf16 {
        2
    } else {
        4
    };
    let weights = [
        ("w1", f * h * 4),
        ("b1", h * 4),
        ("w2", h * c * 4),
        ("b2", c * 4),
    ];
    let mut alloc = |a: &mut Allocator, name: &str, bytes: u64| {
        // Names are unique per step; a refused request cannot happen (no limit).
        let _ = a.malloc(name, bytes.max(1), &mut Unlimited);
        peak = (peak.0.max(a.reserved()), peak.1.max(a.allocated()));
    };
    for (name, bytes) in weights {
        alloc(&mut a, name, bytes);
    }
    let mut state = weights.iter().map(|w| w.1).sum::<u64>();
    for step in 0..2 {
        for m in 0..k.accumulation.max(1) {
            let t = |n: &str| format!("{n}.{step}.{m}");
            alloc(&mut a, &t("x"), micro * f * 4);
            if k.precision == TrainPrecision::Bf16 {
                alloc(&mut a, &t("x16"), micro * f * 2);
                alloc(&mut a, &t("w1_16"), f * h * 2);
                alloc(&mut a, &t("w2_16"), h * c * 2);
            }
            alloc(&mut a, &t("z1"), micro * h * 4);
            alloc(&mut a, &t("a1"), micro * h * act);
            alloc(&mut a, &t("z2"), micro * c * 4);
            if k.recompute {
                // Only the input is kept; layer 1 is recomputed in the backward pass.
                a.free(&t("z1"));
                a.free(&t("a1"));
            }
            alloc(&mut a, &t("loss"), 4);
            alloc(&mut a, &t("dz2"), micro * c * 4);
            if k.recompute {
                alloc(&mut a, &t("z1"), micro * h * 4);
                alloc(&mut a, &t("a1"), micro * h * act);
            }
            if step == 0 && m == 0 {
                for (name, bytes) in weights {
                    alloc(&mut a, &format!("grad.{name}"), bytes);
                }
            }
            alloc(&mut a, &t("da1"), micro * h * 4);
            a.free(&t("a1"));
            alloc(&mut a, &t("dz1"), micro * h * 4);
            for n in [
                "da1", "z1", "dz2", "z2", "dz1", "x", "x16", "w1_16", "w2_16", "loss",
            ] {
                a.free(&t(n));
            }
        }
        if step == 0 && k.optimizer == Optim::Adam {
            for (name, bytes) in weights {
                alloc(&mut a, &format!("m.{name}"), bytes);
                alloc(&mut a, &format!("v.{name}"), bytes);
            }
        }
    }
    state +=
        weights.iter().map(|w| w.1).sum::<u64>() * if k.optimizer == Optim::Adam { 3 } else { 1 };
    MemoryProfile {
        peak_reserved: peak.0,
        peak_allocated: peak.1,
        state_bytes: state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::labs::catalog::{LabId, lab};

    #[test]
    fn accumulation_cuts_the_peak_and_the_reference_fits_the_budget() {
        let l = lab(LabId::FitTheBudget);
        let base = profile(&l.baseline);
        let reference = profile(&l.reference);
        let budget = base.peak_reserved as f64 * l.memory_share.unwrap();
        assert!(base.peak_allocated <= base.peak_reserved);
        assert!(
            (reference.peak_reserved as f64) <= budget,
            "{reference:?} vs budget {budget} of {base:?}"
        );
        let recompute = profile(&Knobs {
            recompute: true,
            ..l.baseline
        });
        // With one hidden layer the backward pass needs layer 1's activations back at
        // once, so recomputing them moves the peak but cannot lower it.
        assert_eq!(recompute.peak_allocated, base.peak_allocated);
        let sgd = profile(&Knobs {
            optimizer: Optim::Sgd,
            ..l.baseline
        });
        assert!(sgd.state_bytes < base.state_bytes);
    }
}

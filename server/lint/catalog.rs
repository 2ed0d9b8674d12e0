//! The one list of rules: each with a stable code, a one-sentence why, a fix, the
//! lesson section that teaches it, the live experiment that shows its cost (with the
//! measured quantity to quote when this server has one), and the PyTorch version for an
//! API that changed. Codes are grouped by lesson theme — GL1xx syncs and timing, GL2xx
//! copies and input pipelines, GL3xx memory and the step, GL4xx mixed precision, GL5xx
//! devices — and a code never changes meaning once published.

/// One rule.
#[derive(Debug, serde::Serialize)]
pub struct Rule {
    /// Stable code, e.g. `GL101`.
    pub code: &'static str,
    /// Short kebab-case name, e.g. `sync-every-step`.
    pub name: &'static str,
    /// Why it matters, in one sentence.
    pub why: &'static str,
    /// What to write instead.
    pub fix: &'static str,
    /// The lesson's slug (`/lessons/<slug>`).
    pub lesson: &'static str,
    /// The heading id of the section that explains it.
    pub section: &'static str,
    /// The live experiment that shows the cost, if one does.
    pub experiment: Option<ExperimentLink>,
    /// For a deprecated or version-dependent API: since which PyTorch version, in words.
    pub changed_in: Option<&'static str>,
}

/// A live experiment in a lesson.
#[derive(Debug, serde::Serialize)]
pub struct ExperimentLink {
    /// The experiment's directive name, e.g. `training-run`.
    pub name: &'static str,
    /// The lesson it is placed in.
    pub lesson: &'static str,
    /// The heading id of the section it is placed in.
    pub section: &'static str,
    /// The quantity (`experiment.quantity`) whose latest value on this server measures
    /// the cost, and the sentence that quotes it (`{value}` is replaced).
    pub measured: Option<(&'static str, &'static str)>,
}

impl Rule {
    /// The lesson section's address on this site.
    pub fn lesson_url(&self) -> String {
        format!("/lessons/{}#{}", self.lesson, self.section)
    }
}

impl ExperimentLink {
    /// The experiment's address on this site.
    pub fn url(&self) -> String {
        format!("/lessons/{}#{}", self.lesson, self.section)
    }
}

const TRAINING_RUN: ExperimentLink = ExperimentLink {
    name: "training-run",
    lesson: "training-step",
    section: "a-real-run-on-the-server",
    measured: Some((
        "training.log_every_step_slowdown",
        "On this server's GPU, reading the loss every step made each training step {value} as long as reading it every few steps (the training-run experiment).",
    )),
};

const TRANSFER: ExperimentLink = ExperimentLink {
    name: "transfer-benchmark",
    lesson: "where-tensors-live",
    section: "pinned-memory-and-non-blocking-copies",
    measured: None,
};

/// Every rule, in code order.
pub const RULES: &[Rule] = &[
    Rule {
        code: "GL101",
        name: "sync-every-step",
        why: "`.item()`, `.cpu()`, `.numpy()` and `.tolist()` make the CPU wait until the GPU has finished everything queued, so the CPU can no longer queue the next step ahead.",
        fix: "Accumulate `loss.detach()` on the device and read it every N steps, e.g. under `if step % 100 == 0:`.",
        lesson: "async-and-timing",
        section: "logging-without-stalling",
        experiment: Some(TRAINING_RUN),
        changed_in: None,
    },
    Rule {
        code: "GL102",
        name: "synchronize-every-step",
        why: "`torch.cuda.synchronize()` in the training loop stops the CPU at every step until the GPU is idle, so the two never work at the same time.",
        fix: "Remove it from the loop; synchronise only around a measurement, or read CUDA events.",
        lesson: "async-and-timing",
        section: "sync-points-where-the-cpu-waits",
        experiment: Some(TRAINING_RUN),
        changed_in: None,
    },
    Rule {
        code: "GL103",
        name: "timer-without-sync",
        why: "A host timer read after GPU work without a sync measures only how long the CPU took to queue the work, not how long the GPU took to run it.",
        fix: "Call `torch.cuda.synchronize()` before each timer read, or time with `torch.cuda.Event(enable_timing=True)` and `elapsed_time`.",
        lesson: "async-and-timing",
        section: "the-timing-trap",
        experiment: Some(ExperimentLink {
            name: "timing-trap",
            lesson: "async-and-timing",
            section: "the-timing-trap",
            measured: Some((
                "timing.underestimate_factor",
                "On this server's GPU, a host timer read without a sync showed {value} less time than the work took (the timing-trap experiment).",
            )),
        }),
        changed_in: None,
    },
    Rule {
        code: "GL104",
        name: "print-tensor-every-step",
        why: "Printing a tensor formats its value, which copies it to the host and waits for the GPU: a sync point on every step.",
        fix: "Print a number read every N steps (`loss.item()` under `if step % N == 0:`), not the tensor every step.",
        lesson: "async-and-timing",
        section: "logging-without-stalling",
        experiment: Some(TRAINING_RUN),
        changed_in: None,
    },
    Rule {
        code: "GL201",
        name: "pin-memory-per-copy",
        why: "`t.pin_memory()` right before a copy is itself a blocking copy into a freshly allocated pinned buffer, which can make the transfer slower than a plain `.to(device)`.",
        fix: "Let `DataLoader(pin_memory=True)` pin batches in its workers, or pin one staging buffer once and reuse it.",
        lesson: "where-tensors-live",
        section: "pinned-memory-and-non-blocking-copies",
        experiment: Some(TRANSFER),
        changed_in: None,
    },
    Rule {
        code: "GL202",
        name: "pageable-batches",
        why: "Without `pin_memory=True` every batch sits in pageable memory, so its copy to the GPU is staged through a pinned buffer and cannot overlap with compute.",
        fix: "Pass `pin_memory=True` to the `DataLoader` (and copy with `non_blocking=True`) when training on a GPU.",
        lesson: "where-tensors-live",
        section: "pinned-memory-and-non-blocking-copies",
        experiment: Some(TRANSFER),
        changed_in: None,
    },
    Rule {
        code: "GL203",
        name: "dataloader-without-workers",
        why: "With the default `num_workers=0` the training process loads and collates every batch itself, so the GPU waits while it does.",
        fix: "Pass `num_workers` above zero (and keep the training code under `if __name__ == \"__main__\":`).",
        lesson: "where-tensors-live",
        section: "pinned-memory-and-non-blocking-copies",
        experiment: None,
        changed_in: None,
    },
    Rule {
        code: "GL204",
        name: "workers-without-main-guard",
        why: "DataLoader workers started with `spawn` (the default on Windows and macOS) or `forkserver` (Linux from Python 3.14) import the script again, so without a `__main__` guard it fails or starts training over in every worker.",
        fix: "Put the training code in a function and call it under `if __name__ == \"__main__\":`.",
        lesson: "where-tensors-live",
        section: "pinned-memory-and-non-blocking-copies",
        experiment: None,
        changed_in: None,
    },
    Rule {
        code: "GL205",
        name: "tensor-made-on-the-cpu-in-the-loop",
        why: "A tensor built on the CPU and then moved pays an allocation, a fill and a host-to-device copy every step, where building it on the device pays only the fill.",
        fix: "Create it on the target device: `torch.zeros(..., device=device)`.",
        lesson: "where-tensors-live",
        section: "create-on-the-target-device",
        experiment: None,
        changed_in: None,
    },
    Rule {
        code: "GL301",
        name: "loss-kept-with-its-graph",
        why: "A loss tensor kept across steps (appended to a list or added to a running total) keeps its `grad_fn` and autograd history alive, so memory creeps up every step.",
        fix: "Keep `loss.detach()` (a running total on the device) or `loss.item()` read every N steps.",
        lesson: "training-step",
        section: "keeping-graphs-alive",
        experiment: None,
        changed_in: None,
    },
    Rule {
        code: "GL302",
        name: "empty-cache-in-the-loop",
        why: "`torch.cuda.empty_cache()` hands cached blocks back to the driver, so the allocator must ask for them again with slow driver calls, and it frees no memory a live tensor holds.",
        fix: "Remove it from the loop; to fix an out-of-memory error, drop references or shrink the batch.",
        lesson: "gpu-memory",
        section: "pytorchs-caching-allocator",
        experiment: Some(ExperimentLink {
            name: "allocator-playground",
            lesson: "gpu-memory",
            section: "why-nvidia-smi-reads-higher",
            measured: None,
        }),
        changed_in: None,
    },
    Rule {
        code: "GL303",
        name: "missing-zero-grad",
        why: "Gradients add up across `backward()` calls, so without `zero_grad()` every step applies the sum of all earlier steps' gradients.",
        fix: "Call `optimizer.zero_grad()` once per optimiser step (before `backward()`, or right after `step()`).",
        lesson: "training-step",
        section: "forgetting-zero-grad",
        experiment: None,
        changed_in: None,
    },
    Rule {
        code: "GL401",
        name: "deprecated-cuda-amp-autocast",
        why: "`torch.cuda.amp.autocast` (and `torch.cpu.amp.autocast`) are deprecated spellings, kept only for old scripts, that PyTorch will remove.",
        fix: "Write `torch.autocast(device_type=\"cuda\", dtype=...)` (or `torch.amp.autocast(\"cuda\", ...)`).",
        lesson: "mixed-precision",
        section: "autocast-16-bit-where-it-is-safe",
        experiment: None,
        changed_in: Some("deprecated since PyTorch 2.4, which warns with a FutureWarning"),
    },
    Rule {
        code: "GL402",
        name: "deprecated-cuda-amp-gradscaler",
        why: "`torch.cuda.amp.GradScaler` is a deprecated spelling, kept only for old scripts, that PyTorch will remove.",
        fix: "Write `torch.amp.GradScaler(\"cuda\")`.",
        lesson: "mixed-precision",
        section: "loss-scaling-why-fp16-needs-gradscaler",
        experiment: None,
        changed_in: Some("PyTorch 2.4 and later warn that it is deprecated, with a FutureWarning"),
    },
    Rule {
        code: "GL403",
        name: "fp16-without-grad-scaler",
        why: "FP16 cannot hold gradients below about 6e-8, so without loss scaling small gradients underflow to zero and training quietly stalls (BF16 has FP32's range and needs no scaler).",
        fix: "Use `scaler = torch.amp.GradScaler(\"cuda\")` with `scaler.scale(loss).backward()`, `scaler.step(optimizer)`, `scaler.update()` — or autocast to `torch.bfloat16`.",
        lesson: "mixed-precision",
        section: "loss-scaling-why-fp16-needs-gradscaler",
        experiment: None,
        changed_in: None,
    },
    Rule {
        code: "GL404",
        name: "tf32-switches-mixed",
        why: "The script sets TF32 both through the old `allow_tf32` flags and the newer `fp32_precision` settings, which PyTorch says not to mix.",
        fix: "Use one style: `fp32_precision = \"tf32\"` on PyTorch 2.9 and later, `allow_tf32` (or `torch.set_float32_matmul_precision(\"high\")`) before.",
        lesson: "mixed-precision",
        section: "tf32-faster-fp32-without-changing-your-model",
        experiment: None,
        changed_in: Some(
            "`fp32_precision` arrived in PyTorch 2.9; the `allow_tf32` flags are to be deprecated after 2.9",
        ),
    },
    Rule {
        code: "GL501",
        name: "hard-coded-cuda",
        why: "A script that says `\"cuda\"` without ever asking `torch.cuda.is_available()` crashes on a machine without a usable GPU instead of falling back or saying why.",
        fix: "Pick the device once: `device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")`, and pass it everywhere.",
        lesson: "is-the-gpu-there",
        section: "writing-code-that-picks-its-device",
        experiment: None,
        changed_in: None,
    },
];

/// The rule with `code`.
///
/// # Panics
/// When no rule has that code (a finding is only ever made with a listed code).
pub fn rule(code: &str) -> &'static Rule {
    RULES
        .iter()
        .find(|r| r.code == code)
        .unwrap_or_else(|| panic!("no rule {code}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_sorted() {
        let codes: Vec<_> = RULES.iter().map(|r| r.code).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(codes, sorted);
        let mut names: Vec<_> = RULES.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULES.len());
        assert!(RULES.len() >= 15);
    }

    #[test]
    fn every_measured_sentence_quotes_its_value() {
        for rule in RULES {
            if let Some((_, sentence)) = rule.experiment.as_ref().and_then(|e| e.measured) {
                assert!(sentence.contains("{value}"), "{}", rule.code);
            }
        }
    }
}

//! One training step profiled kernel by kernel, each against this GPU's ceilings: an
//! event after every launch of one step (so a kernel's time is the gap between the
//! event before it and the one after), the bytes each kernel must move and the
//! arithmetic it must do at this batch and width (counted here from the shapes), and
//! the two ceilings measured in the same job the way the server's start-up calibration
//! measures them (`ceilings::gpu_d2d`, `ceilings::gpu_gemm`). A kernel's floor is the
//! larger of its bytes over the memory ceiling and its FLOP over the compute ceiling;
//! how near it ran to that floor is what "near its roofline" means, kernel by kernel.

use serde::Serialize;

use super::mlp::{CLASSES, FEATURES};
use crate::experiments::ExperimentError;
use crate::experiments::ceilings;
use crate::experiments::precision::Format;
use crate::gpu::launch::LaunchShape;
use crate::gpu::{Gpu, GpuError, Marks, Stream, column_chunks};
use crate::measure::Deadline;

/// Events along one step: the one before it, then one after each launch, named.
pub struct KernelMarks {
    marks: Marks,
    names: Vec<&'static str>,
}

impl KernelMarks {
    /// Marks the start of a step on `stream`.
    pub fn start(gpu: &Gpu, stream: &Stream) -> Result<Self, GpuError> {
        let mut marks = gpu.marks();
        marks.record(stream)?;
        Ok(Self {
            marks,
            names: Vec::new(),
        })
    }

    /// Marks the end of kernel `name`, just launched on `stream`.
    pub fn after(&mut self, stream: &Stream, name: &'static str) -> Result<(), GpuError> {
        self.marks.record(stream)?;
        self.names.push(name);
        Ok(())
    }

    /// Each kernel's name and milliseconds, in launch order (waits for the GPU).
    pub fn times(&self) -> Result<Vec<(&'static str, f64)>, GpuError> {
        let gaps = self.marks.intervals_ms()?;
        Ok(self.names.iter().copied().zip(gaps).collect())
    }
}

/// One kernel of the profiled step.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct KernelTime {
    /// What it computes.
    pub name: String,
    /// Its time: the gap between the events around it, ms.
    pub ms: f64,
    /// Bytes it must read and write at this batch and width.
    pub bytes: f64,
    /// Floating-point operations it must do.
    pub flop: f64,
    /// Achieved bandwidth, GB/s (bytes ÷ time).
    pub gbps: f64,
    /// Achieved arithmetic rate, TFLOP/s.
    pub tflops: f64,
    /// Its floor at this GPU's ceilings, ms: max(bytes ÷ memory, FLOP ÷ compute).
    pub floor_ms: f64,
    /// Which ceiling sets the floor: `memory` or `compute`.
    pub bound: &'static str,
    /// Floor ÷ time: 1 is at the ceiling, 0.1 is ten times slower than it.
    pub of_ceiling: f64,
    /// Blocks it was launched on (our kernels; cuBLAS chooses its own).
    pub blocks: Option<u64>,
}

/// The profiled step.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct KernelProfile {
    /// Every kernel, in launch order.
    pub kernels: Vec<KernelTime>,
    /// Their times added up, ms.
    pub step_ms: f64,
    /// Their floors added up: the step's roofline, ms.
    pub floor_ms: f64,
    /// The memory ceiling measured in this job (device-to-device copy, read + write), GB/s.
    pub memory_gbps: f64,
    /// The compute ceiling measured in this job (a square GEMM in the step's format), TFLOP/s.
    pub compute_tflops: f64,
    /// How the two ceilings were measured.
    pub ceilings_how: String,
    /// The GPU's streaming multiprocessors, when known.
    pub sms: Option<u32>,
}

/// The shape of the step a cost is counted for.
#[derive(Debug, Clone, Copy)]
pub struct StepShape {
    /// Batch rows.
    pub b: usize,
    /// Hidden width.
    pub h: usize,
    /// Bytes per activation element: 4 (FP32) or 2 (BF16).
    pub e: usize,
    /// Adam (7 accesses per parameter) or SGD (3).
    pub adam: bool,
}

/// Bytes and FLOP kernel `name` must move and do in a step of `shape`.
pub fn cost(name: &str, shape: StepShape) -> Option<(f64, f64)> {
    let StepShape { b, h, e, adam } = shape;
    let (f, c, k) = (FEATURES, CLASSES, column_chunks(b));
    let update = |n: usize| (if adam { 7 } else { 3 }) * n * 4;
    let (bytes, flop) = match name {
        "gemm z1 = x·W1" => ((b * f + f * h + b * h) * e, 2 * b * f * h),
        "bias_relu a1 = relu(z1 + b1)" => (2 * b * h * e + h * 4, 2 * b * h),
        "gemm z2 = a1·W2" => ((b * h + h * c) * e + b * c * 4, 2 * b * h * c),
        "softmax_xent loss, dz2" => (2 * b * c * 4 + c * 4 + b * 4 * 2, 6 * b * c),
        "scaled_sum mean loss" => (b * 4 + 4, b),
        "to_bf16 dz2" => (b * c * 6, 0),
        "column_partials db2" => ((b * c + k * c) * 4, b * c),
        "column_sums db2 = Σ partials" => ((k * c + c) * 4, k * c),
        "gemm dW2 = a1ᵀ·dz2" => ((b * h + b * c) * e + h * c * 4, 2 * b * h * c),
        "gemm da1 = dz2·W2ᵀ" => ((b * c + h * c + b * h) * e, 2 * b * c * h),
        "relu_backward_partials dz1, Σ chunks" => (3 * b * h * e + k * h * 4, 2 * b * h),
        "gemm dW1 = xᵀ·dz1" => ((b * f + b * h) * e + f * h * 4, 2 * b * f * h),
        "column_sums db1 = Σ partials" => ((k * h + h) * 4, k * h),
        "to_bf16 W1" => (f * h * 6, 0),
        "to_bf16 W2" => (h * c * 6, 0),
        "update W1" => (update(f * h), 10 * f * h),
        "update b1" => (update(h), 10 * h),
        "update W2" => (update(h * c), 10 * h * c),
        "update b2" => (update(c), 10 * c),
        _ => return None,
    };
    Some((bytes as f64, flop as f64))
}

/// Our kernel `name`'s launch in a step of `shape`, and the elements it works on
/// (`None` for cuBLAS's products).
pub fn launch_of(name: &str, shape: StepShape) -> Option<(LaunchShape, usize)> {
    let StepShape { b, h, .. } = shape;
    let (f, c, k) = (FEATURES, CLASSES, column_chunks(b));
    let elementwise = |n: usize| Some((LaunchShape::Elementwise { n }, n));
    match name {
        "bias_relu a1 = relu(z1 + b1)" => Some((LaunchShape::BiasRelu { rows: b, cols: h }, b * h)),
        "relu_backward_partials dz1, Σ chunks" => {
            Some((LaunchShape::PairChunks { rows: b, cols: h }, b * h))
        }
        "column_partials db2" => Some((LaunchShape::ColumnChunks { rows: b, cols: c }, b * c)),
        "column_sums db2 = Σ partials" => {
            Some((LaunchShape::ColumnSums { rows: k, cols: c }, k * c))
        }
        "column_sums db1 = Σ partials" => {
            Some((LaunchShape::ColumnSums { rows: k, cols: h }, k * h))
        }
        "softmax_xent loss, dz2" => Some((
            LaunchShape::SoftmaxXent {
                rows: b,
                classes: c,
            },
            b * c,
        )),
        "scaled_sum mean loss" => Some((LaunchShape::ScaledSum { n: b }, b)),
        "to_bf16 dz2" => elementwise(b * c),
        "to_bf16 W1" | "update W1" => elementwise(f * h),
        "to_bf16 W2" | "update W2" => elementwise(h * c),
        "update b1" => elementwise(h),
        "update b2" => elementwise(c),
        _ => None,
    }
}

/// The two ceilings, measured now on `gpu`: memory by a 256 MiB device-to-device copy,
/// compute by a 4,096² GEMM in `format`.
pub fn ceilings_now(
    gpu: &mut Gpu,
    format: Format,
    deadline: &Deadline,
) -> Result<(f64, f64, String), ExperimentError> {
    let memory = ceilings::gpu_d2d(gpu, deadline)?;
    let compute = ceilings::gpu_gemm(gpu, format, deadline)?;
    let how = format!("memory: {}; compute: {}", memory.how, compute.how);
    Ok((memory.value, compute.value, how))
}

/// The profile of `times` (from [`KernelMarks::times`]) for a step of `shape`, against
/// `memory_gbps` and `compute_tflops`. A kernel this file has no cost for is an error:
/// the step launched something the profile does not know.
pub fn assemble(
    times: &[(&'static str, f64)],
    shape: StepShape,
    (memory_gbps, compute_tflops, ceilings_how): (f64, f64, String),
    sms: Option<u32>,
) -> Result<KernelProfile, ExperimentError> {
    let mut kernels = Vec::with_capacity(times.len());
    for &(name, ms) in times {
        let (bytes, flop) = cost(name, shape).ok_or_else(|| {
            ExperimentError::Failed(format!("the step launched `{name}`, which has no cost"))
        })?;
        let memory_ms = bytes / (memory_gbps * 1e9) * 1e3;
        let compute_ms = flop / (compute_tflops * 1e12) * 1e3;
        let (floor_ms, bound) = if compute_ms > memory_ms {
            (compute_ms, "compute")
        } else {
            (memory_ms, "memory")
        };
        let seconds = ms.max(1e-9) / 1e3;
        let blocks = launch_of(name, shape)
            .and_then(|(launch, _)| launch.config().ok())
            .map(|c| u64::from(c.grid_dim.0) * u64::from(c.grid_dim.1) * u64::from(c.grid_dim.2));
        kernels.push(KernelTime {
            name: name.to_string(),
            ms,
            bytes,
            flop,
            gbps: bytes / seconds / 1e9,
            tflops: flop / seconds / 1e12,
            floor_ms,
            bound,
            of_ceiling: floor_ms / ms.max(1e-9),
            blocks,
        });
    }
    Ok(KernelProfile {
        step_ms: kernels.iter().map(|k| k.ms).sum(),
        floor_ms: kernels.iter().map(|k| k.floor_ms).sum(),
        kernels,
        memory_gbps,
        compute_tflops,
        ceilings_how,
        sms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP32: StepShape = StepShape {
        b: 4096,
        h: 4096,
        e: 4,
        adam: true,
    };

    #[test]
    fn the_floor_is_the_larger_of_the_two_ceilings_and_unknown_kernels_are_refused() {
        // H200 run 2: 4.25 TB/s device memory, 51 TFLOP/s FP32.
        let ceilings = (4250.0, 51.0, "test".to_string());
        let times = [
            ("bias_relu a1 = relu(z1 + b1)", 0.1),
            ("gemm z1 = x·W1", 0.05),
        ];
        let p = assemble(&times, FP32, ceilings.clone(), Some(132)).unwrap();
        let relu = &p.kernels[0];
        // 2 × 64 MiB + the bias over 4.25 TB/s: 31.6 µs, memory-bound.
        assert_eq!(relu.bound, "memory");
        assert!((relu.floor_ms - 0.031_59).abs() < 1e-4, "{relu:?}");
        assert!((relu.of_ceiling - relu.floor_ms / 0.1).abs() < 1e-12);
        assert!((relu.gbps - relu.bytes / 1e-4 / 1e9).abs() < 1e-6);
        let gemm = &p.kernels[1];
        assert_eq!(gemm.flop, 2.0 * 4096.0 * 32.0 * 4096.0);
        assert!((p.step_ms - 0.15).abs() < 1e-12);
        assert!(assemble(&[("mystery", 1.0)], FP32, ceilings, None).is_err());
    }

    /// Every kernel name the step launches (`pass.rs`, `gpu.rs`), FP32 and BF16.
    const STEP: [&str; 19] = [
        "to_bf16 W1",
        "to_bf16 W2",
        "gemm z1 = x·W1",
        "bias_relu a1 = relu(z1 + b1)",
        "gemm z2 = a1·W2",
        "softmax_xent loss, dz2",
        "scaled_sum mean loss",
        "column_partials db2",
        "column_sums db2 = Σ partials",
        "to_bf16 dz2",
        "gemm dW2 = a1ᵀ·dz2",
        "gemm da1 = dz2·W2ᵀ",
        "relu_backward_partials dz1, Σ chunks",
        "gemm dW1 = xᵀ·dz1",
        "column_sums db1 = Σ partials",
        "update W1",
        "update b1",
        "update W2",
        "update b2",
    ];

    #[test]
    fn every_kernel_of_the_step_has_a_cost_and_ours_fill_the_gpu() {
        // SM counts: T4 40, V100 80, A100 108, H100/H200 132, B200 148.
        for sms in [40, 80, 108, 132, 148] {
            for (b, h) in [
                (4096, 4096),
                (1024, 4096),
                (4096, 1024),
                (256, 1024),
                (32, 128),
            ] {
                let shape = StepShape { b, h, ..FP32 };
                for name in STEP {
                    assert!(cost(name, shape).is_some(), "{name}");
                    let Some((launch, elements)) = launch_of(name, shape) else {
                        assert!(name.starts_with("gemm"), "{name} has no launch shape");
                        continue;
                    };
                    let config = launch.config().unwrap();
                    assert!(
                        crate::gpu::fills_the_gpu(&config, elements, sms),
                        "{name} at {b} / {h}: {:?} blocks for {elements} elements on {sms} SMs",
                        config.grid_dim
                    );
                }
            }
        }
    }

    #[test]
    fn bf16_activations_halve_the_bytes_of_every_pass_over_the_hidden_layer() {
        let bf16 = StepShape { e: 2, ..FP32 };
        for name in [
            "bias_relu a1 = relu(z1 + b1)",
            "relu_backward_partials dz1, Σ chunks",
            "gemm da1 = dz2·W2ᵀ",
        ] {
            let (full, _) = cost(name, FP32).unwrap();
            let (half, _) = cost(name, bf16).unwrap();
            assert!(
                half < 0.52 * full && half > 0.48 * full,
                "{name}: {half} of {full}"
            );
        }
    }
}

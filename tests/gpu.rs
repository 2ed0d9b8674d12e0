//! GPU-only checks. They run when this machine has a usable GPU and are reported as
//! SKIPPED, loudly, when it does not (as in CI). With `GPULAB_REQUIRE_GPU=1` (the GPU
//! chain sets it) a missing GPU is a failure, never a skip.

use std::time::Duration;

use gpulab::experiments::Experiment;
use gpulab::experiments::break_it::run_placement;
use gpulab::experiments::launch::{self, Launch, LaunchParams};
use gpulab::experiments::matmul::{Matmul, MatmulParams};
use gpulab::experiments::precision::{Precision, PrecisionParams};
use gpulab::experiments::streams::{Streams, StreamsParams};
use gpulab::experiments::timing::{self, TARGET_KERNEL_MS, Timing, TimingParams};
use gpulab::experiments::training::{Optim, TrainParams, TrainPrecision, gpu as train_gpu, model};
use gpulab::experiments::transfer::{Transfer, TransferParams};
use gpulab::gpu::Gpu;
use gpulab::measure::Deadline;

fn gpu() -> Option<Gpu> {
    match Gpu::open() {
        Ok(gpu) => Some(gpu),
        Err(reason) => {
            assert!(
                std::env::var("GPULAB_REQUIRE_GPU").is_err(),
                "GPULAB_REQUIRE_GPU is set but no GPU opens: {reason}"
            );
            eprintln!("SKIPPED GPU test: no usable GPU ({reason})");
            None
        }
    }
}

fn later() -> Deadline {
    Deadline::after(Duration::from_secs(300))
}

#[test]
fn gpu_transfers_are_real_and_pinned_beats_pageable_at_large_sizes() {
    let Some(mut gpu) = gpu() else { return };
    assert_eq!(gpu.card().kind, gpulab::gpu::DeviceKind::Cuda);
    let result = Transfer::run_gpu(
        &mut gpu,
        &TransferParams {
            max_bytes: 256 << 20,
        },
        &later(),
    )
    .unwrap();
    let at = |dir: &str, mem: &str| {
        result
            .points
            .iter()
            .rfind(|p| p.direction == dir && p.memory == mem)
            .unwrap()
            .gbps
            .median
    };
    for dir in ["h2d", "d2h"] {
        assert!(at(dir, "pinned") > 1.0, "{dir} pinned bandwidth");
        assert!(
            at(dir, "pinned") >= at(dir, "pageable") * 0.9,
            "{dir}: pinned should not lose to pageable"
        );
        if let Some(peak) = result.link_peak_gbps {
            assert!(
                at(dir, "pinned") <= peak * 1.1,
                "{dir}: above the link's theoretical peak"
            );
        }
    }
}

#[test]
fn gpu_kernels_load_and_run() {
    let Some(gpu) = gpu() else { return };
    assert_eq!(
        gpu.relu(&[-1.0, 2.0, -3.0, 4.0]).unwrap(),
        vec![0.0, 2.0, 0.0, 4.0]
    );
}

#[test]
fn gpu_and_cpu_matmuls_agree_and_the_gpu_wins_at_large_sizes() {
    let Some(mut gpu) = gpu() else { return };
    let result = Matmul::run_gpu(&mut gpu, &MatmulParams { max_size: 2048 }, &later()).unwrap();
    let diff = result.max_abs_diff_vs_cpu.expect("both ran at 256");
    assert!(diff < 1e-2, "GPU and CPU SGEMM disagree by {diff}");
    assert!(
        result.crossover_size.is_some(),
        "the GPU should win by 2048: {result:?}"
    );
}

#[test]
fn gpu_timing_trap_shows_the_unsynchronised_timer_under_reporting() {
    let Some(mut gpu) = gpu() else { return };
    let r = Timing::run_gpu(&mut gpu, &TimingParams {}, &later()).unwrap();
    assert!(
        r.device_ms > 10.0,
        "eight calibrated kernels take tens of ms: {r:?}"
    );
    assert!(r.underestimate_factor > 2.0, "{r:?}");
    assert!(
        (r.host_sync_ms - r.device_ms).abs() < r.device_ms * 0.5,
        "{r:?}"
    );
    // Calibrated on a warm GPU: the kernels take about the target, and the device lane
    // agrees with the host lane (no kernel before its launch).
    assert!(r.calibration.converged, "{:?}", r.calibration);
    assert!(
        (r.kernel_ms / TARGET_KERNEL_MS - 1.0).abs() <= 0.25,
        "{} ms per kernel: {:?}",
        r.kernel_ms,
        r.calibration
    );
    let (ok, detail) = timing::judge(&r, true);
    assert!(ok, "{detail}");
}

#[test]
fn gpu_graph_replay_and_fused_kernel_match_eager_and_replay_costs_one_call() {
    let Some(mut gpu) = gpu() else { return };
    let params = LaunchParams {
        max_kernels: 100,
        elements: 4096,
    };
    let r = Launch::run_gpu(&mut gpu, &params, &later()).unwrap();
    let (ok, detail) = launch::judge(&r, 100);
    assert!(ok, "{detail}");
    let p = r.points.last().unwrap();
    // One graph launch call takes less host time than 100 kernel launch calls: the
    // reason graphs exist, compared within this run with a wide margin.
    assert!(
        p.ways[1].submit_us.median * 2.0 < p.ways[0].submit_us.median,
        "{p:?}"
    );
    eprintln!("{}", Launch::table(&params, &r));
}

#[test]
fn gpu_streams_are_calibrated_and_their_outputs_checked() {
    let Some(mut gpu) = gpu() else { return };
    let p = StreamsParams {
        chunks: 8,
        chunk_mib: 8,
        streams: 4,
    };
    let r = Streams::run_gpu(&mut gpu, &p, &later()).unwrap();
    assert!(r.outputs_match, "{:?}", r.output_error);
    assert!(r.calibration.converged, "{:?}", r.calibration);
    assert!(
        (0.75..=1.33).contains(&r.compute_copy_ratio),
        "compute {} ms vs copy {} ms",
        r.compute_ms,
        r.copy_ms
    );
}

#[test]
fn gpu_and_cpu_training_runs_give_the_same_loss_curve() {
    let Some(mut gpu) = gpu() else { return };
    // FP32 should agree to float rounding; BF16 to the rounding of its casts.
    for (precision, optimizer, tolerance) in [
        (TrainPrecision::Fp32, Optim::Adam, 1e-3),
        (TrainPrecision::Fp32, Optim::Sgd, 1e-3),
        (TrainPrecision::Bf16, Optim::Adam, 2e-2),
    ] {
        let params = TrainParams {
            batch: 64,
            hidden: 128,
            steps: 100,
            log_every: 10,
            precision,
            optimizer,
        };
        let on_gpu = train_gpu::run(&mut gpu, &params, &later()).unwrap();
        let on_cpu = model::run_cpu(&params, &later()).unwrap();
        assert_eq!(on_gpu.loss_curve.len(), on_cpu.loss_curve.len());
        for (g, c) in on_gpu.loss_curve.iter().zip(&on_cpu.loss_curve) {
            let gap = (g.loss - c.loss).abs() / c.loss.abs().max(1e-3);
            assert!(
                gap < tolerance,
                "{precision:?}/{optimizer:?} step {}: GPU {} vs CPU {}",
                g.step,
                g.loss,
                c.loss
            );
        }
        assert!((on_gpu.accuracy - on_cpu.accuracy).abs() < 0.05);
        assert!(on_gpu.read_every_step_ms > 0.0 && on_gpu.samples_per_sec > 0.0);
    }
}

#[test]
fn the_profiled_step_accounts_for_every_kernel_and_the_fused_ones_run_near_the_memory_ceiling() {
    let Some(mut gpu) = gpu() else { return };
    let mut step_ms = Vec::new();
    for precision in [TrainPrecision::Fp32, TrainPrecision::Bf16] {
        let params = TrainParams {
            batch: 4096,
            hidden: 4096,
            steps: 20,
            log_every: 10,
            precision,
            optimizer: Optim::Adam,
        };
        let r = train_gpu::run(&mut gpu, &params, &later()).unwrap();
        let p = r.kernels.expect("a GPU run carries its kernel profile");
        // FP32: 3 + 4 + 5 + 4 updates; BF16 adds the three casts.
        let expected = if precision == TrainPrecision::Bf16 {
            19
        } else {
            16
        };
        assert_eq!(
            p.kernels.len(),
            expected,
            "{:?}",
            p.kernels.iter().map(|k| &k.name).collect::<Vec<_>>()
        );
        assert!(p.memory_gbps > 100.0 && p.compute_tflops > 1.0, "{p:?}");
        // The profiled step's kernels add up to about one timed step.
        assert!(
            p.step_ms > 0.5 * r.step_ms.median && p.step_ms < 2.0 * r.step_ms.median,
            "profiled {} ms against steps of {} ms",
            p.step_ms,
            r.step_ms.median
        );
        for name in [
            "bias_relu a1 = relu(z1 + b1)",
            "relu_backward_partials dz1, Σ chunks",
        ] {
            let k = p.kernels.iter().find(|k| k.name == name).unwrap();
            assert!(
                k.bound == "memory" && k.of_ceiling > 0.3,
                "{name} ran at {:.0}% of the memory ceiling: {k:?}",
                100.0 * k.of_ceiling
            );
        }
        step_ms.push(r.step_ms.median);
    }
    // BF16 activations halve the bytes of a step that is bound by them.
    assert!(
        step_ms[1] < step_ms[0],
        "BF16 {} ms, FP32 {} ms",
        step_ms[1],
        step_ms[0]
    );
}

#[test]
fn gpu_precision_shoot_out_is_fast_at_low_precision_and_accurate_at_fp32() {
    let Some(mut gpu) = gpu() else { return };
    let r = Precision::run_gpu(&mut gpu, &PrecisionParams { size: 4096 }, &later()).unwrap();
    let by = |name| r.rows.iter().find(|row| row.precision == name).unwrap();
    assert!(by("fp32").max_rel_error < 1e-4, "{r:?}");
    assert!(by("bf16").max_abs_error > by("fp32").max_abs_error);
    assert!(
        by("fp16").tflops > 2.0 * by("fp32").tflops,
        "tensor cores should beat FP32 CUDA cores: {r:?}"
    );
    for row in &r.rows {
        if let Some(peak) = row.peak_tflops {
            assert!(row.tflops <= peak * 1.05, "above peak: {row:?}");
        }
    }
}

#[test]
fn gpu_preflight_finds_the_batch_in_host_memory() {
    let Some(mut gpu) = gpu() else { return };
    let r = run_placement(Some(&mut gpu)).unwrap();
    assert_eq!(r.model_device, "cuda:0");
    let device = |name: &str| {
        r.fields
            .iter()
            .find(|f| f.name == name)
            .unwrap()
            .device
            .clone()
    };
    assert_eq!(device("fc1.weight"), "cuda:0");
    assert_eq!(device("features"), "cpu");
    assert!(r.preflight_error.unwrap().contains("'labels' (cpu)"));
}

#[test]
fn every_selftest_check_passes_on_the_gpu() {
    let Some(_) = gpu() else { return };
    let report = gpulab::engine::selftest::run();
    assert_eq!(report.backend, gpulab::gpu::DeviceKind::Cuda);
    assert_eq!(report.failed(), 0, "{}", report.render());
}

#[tokio::test]
async fn the_gpu_passes_its_start_up_self_test_and_a_failure_switches_the_server_to_the_cpu() {
    let Some(mut gpu) = gpu() else { return };
    let checks = gpulab::engine::first_contact::gpu_checks(&mut gpu);
    assert!(checks.len() >= 10, "{checks:?}");
    assert!(!checks.iter().any(|c| c.failed()), "{checks:#?}");
    drop(gpu);
    // The same server with a failing check injected: the GPU is not used.
    let dir = tempfile::tempdir().unwrap();
    let server = crate::support::BinaryServer::start_with_env(
        &dir.path().join("gpulab.db"),
        &[("GPULAB_INJECT_SELFTEST_FAILURE", "1")],
    );
    let body: serde_json::Value = reqwest::get(format!("{}/api/device", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["device"]["kind"], "cpu", "{body}");
    let note = body["device"]["note"].as_str().unwrap();
    assert!(note.contains("start-up self-test"), "{note}");
    assert!(note.contains("injected failure"), "{note}");
}

#[test]
fn nvml_describes_the_cuda_device_and_the_server_is_not_another_process() {
    let Some(gpu) = gpu() else { return };
    let card = gpu.card();
    let pcie = card
        .pcie
        .as_ref()
        .expect("NVML matched the CUDA device by UUID or PCI id");
    assert!(pcie.max_generation >= pcie.generation && pcie.max_width >= pcie.width);
    assert!(card.sm_clock_max_mhz.is_some() && card.driver_version.is_some());
    // Other GPU tests may briefly start a server process; one quiet reading suffices.
    let quiet = (0..20).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        gpu.other_processes() == Some(0)
    });
    assert!(
        quiet,
        "this process counted as another: {:?}",
        gpu.other_processes()
    );
}

#[test]
fn free_memory_returns_after_a_1_gib_transfer_job() {
    let Some(mut gpu) = gpu() else { return };
    let free = |gpu: &Gpu| gpu.memory().report().driver_free_bytes.unwrap();
    // A small job first, so the pool and the context's own first-use allocations are
    // already made before the figure we compare against.
    Transfer::run_gpu(&mut gpu, &TransferParams { max_bytes: 1 << 20 }, &later()).unwrap();
    gpu.release_free_memory().unwrap();
    let before = free(&gpu);
    Transfer::run_gpu(&mut gpu, &TransferParams { max_bytes: 1 << 30 }, &later()).unwrap();
    gpu.release_free_memory().unwrap();
    let after = free(&gpu);
    let lost = before.saturating_sub(after);
    assert!(
        lost < 8 << 20,
        "after the job and the trim, {} MiB of device memory are still held ({before} → {after} bytes free)",
        lost >> 20
    );
}

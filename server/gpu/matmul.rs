//! Experiment: the CPU/GPU matmul crossover (lesson 1). Square FP32 matrix products from
//! 16 × 16 up to the cap, timed on the CPU (multithreaded `matrixmultiply` SGEMM) and,
//! when there is one, on the GPU (cuBLAS SGEMM, CUDA events), with and without copying
//! the inputs in first. The crossover is the first size from which the GPU stays faster.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{Gemm, GemmConfig};
use cudarc::driver::sys::CUevent_flags;
use serde::{Deserialize, Serialize};

use super::cpu;
use super::cuda::CudaHandle;
use super::stats::{Summary, summarize};
use super::{PAST_LIMIT_TRY_SMALLER, check_deadline};

/// Sizes tried, smallest first.
pub const SIZES: &[usize] = &[16, 32, 64, 128, 256, 512, 1024, 2048, 4096];
/// Timed repetitions per size (after one warm-up), fewer when one takes long.
pub const REPS: usize = 5;
/// A CPU size that takes longer than this per product ends the CPU sweep.
pub const CPU_SLOW: Duration = Duration::from_secs(3);

/// What the student asks for.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatmulParams {
    /// Largest matrix side (capped by the server).
    pub max_size: usize,
}

/// One size.
#[derive(Debug, Clone, Serialize)]
pub struct MatmulRow {
    /// Matrix side n (n × n times n × n).
    pub size: usize,
    /// FLOP per product: 2n³.
    pub flop: f64,
    /// CPU milliseconds per product; `None` when skipped as too slow.
    pub cpu_ms: Option<Summary>,
    /// GPU milliseconds per product, data already on the GPU.
    pub gpu_ms: Option<Summary>,
    /// GPU milliseconds including copying both inputs from host memory first.
    pub gpu_with_copy_ms: Option<Summary>,
}

/// The sweep.
#[derive(Debug, Clone, Serialize)]
pub struct MatmulResult {
    /// One row per size.
    pub rows: Vec<MatmulRow>,
    /// First size from which the GPU (data resident) beats the CPU at every larger size.
    pub crossover_size: Option<usize>,
    /// The same, counting the copy in.
    pub crossover_with_copy_size: Option<usize>,
    /// Largest |GPU − CPU| element difference at 256 × 256, when both ran.
    pub max_abs_diff_vs_cpu: Option<f64>,
}

fn sizes(max: usize) -> Vec<usize> {
    SIZES.iter().copied().filter(|s| *s <= max).collect()
}

fn time_cpu(n: usize, deadline: Instant) -> Result<Option<Summary>, String> {
    let a = cpu::random_matrix(n * n, 1);
    let b = cpu::random_matrix(n * n, 2);
    let mut c = vec![0.0f32; n * n];
    let warm = Instant::now();
    cpu::sgemm(n, &a, &b, &mut c);
    if warm.elapsed() > CPU_SLOW {
        return Ok(None);
    }
    let mut samples = Vec::new();
    for _ in 0..REPS {
        check_deadline(deadline, PAST_LIMIT_TRY_SMALLER)?;
        let start = Instant::now();
        cpu::sgemm(n, &a, &b, &mut c);
        std::hint::black_box(&c);
        samples.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok(summarize(&samples))
}

/// First size from which `faster(row)` holds for this and every larger size.
fn crossover(rows: &[MatmulRow], gpu: impl Fn(&MatmulRow) -> Option<f64>) -> Option<usize> {
    let wins: Vec<Option<bool>> = rows
        .iter()
        .map(|r| Some(gpu(r)? < r.cpu_ms?.median))
        .collect();
    let mut answer = None;
    for (row, win) in rows.iter().zip(&wins).rev() {
        match win {
            Some(true) => answer = Some(row.size),
            Some(false) => break,
            None => {}
        }
    }
    answer
}

/// Runs the sweep on the CPU, and on `gpu` when given.
pub fn run(
    mut gpu: Option<&mut CudaHandle>,
    params: &MatmulParams,
    deadline: Instant,
) -> Result<MatmulResult, String> {
    let mut rows = Vec::new();
    let mut cpu_too_slow = false;
    for n in sizes(params.max_size) {
        check_deadline(deadline, PAST_LIMIT_TRY_SMALLER)?;
        let cpu_ms = if cpu_too_slow {
            None
        } else {
            time_cpu(n, deadline)?
        };
        cpu_too_slow |= cpu_ms.is_none();
        let (gpu_ms, gpu_with_copy_ms) = match gpu.as_deref_mut() {
            Some(handle) => {
                let (resident, with_copy) = time_gpu(handle, n, deadline)?;
                (Some(resident), Some(with_copy))
            }
            None => (None, None),
        };
        rows.push(MatmulRow {
            size: n,
            flop: 2.0 * (n as f64).powi(3),
            cpu_ms,
            gpu_ms,
            gpu_with_copy_ms,
        });
    }
    let max_abs_diff_vs_cpu = match gpu {
        Some(handle) if params.max_size >= 256 => Some(agreement(handle, 256)?),
        _ => None,
    };
    Ok(MatmulResult {
        crossover_size: crossover(&rows, |r| r.gpu_ms.map(|s| s.median)),
        crossover_with_copy_size: crossover(&rows, |r| r.gpu_with_copy_ms.map(|s| s.median)),
        rows,
        max_abs_diff_vs_cpu,
    })
}

fn sgemm_config(n: usize) -> GemmConfig<f32> {
    let n = n as i32;
    GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: n,
        n,
        k: n,
        alpha: 1.0,
        lda: n,
        ldb: n,
        beta: 0.0,
        ldc: n,
    }
}

fn time_gpu(
    gpu: &mut CudaHandle,
    n: usize,
    deadline: Instant,
) -> Result<(Summary, Summary), String> {
    let err = |e: cudarc::driver::DriverError| e.to_string();
    let blas = gpu.blas()?;
    let stream = Arc::clone(&gpu.stream);
    let host_a = cpu::random_matrix(n * n, 1);
    let host_b = cpu::random_matrix(n * n, 2);
    let mut a = stream.clone_htod(&host_a).map_err(err)?;
    let mut b = stream.clone_htod(&host_b).map_err(err)?;
    let mut c = stream.alloc_zeros::<f32>(n * n).map_err(err)?;
    let start = gpu
        .ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(err)?;
    let end = gpu
        .ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(err)?;
    let gemm = |a: &cudarc::driver::CudaSlice<f32>,
                b: &cudarc::driver::CudaSlice<f32>,
                c: &mut cudarc::driver::CudaSlice<f32>| {
        // SAFETY: a, b and c each hold n × n floats and the config describes n × n
        // matrices with leading dimension n, so cuBLAS stays inside the buffers.
        unsafe { blas.gemm(sgemm_config(n), a, b, c) }
            .map_err(|e| format!("cuBLAS SGEMM failed: {e}"))
    };
    gemm(&a, &b, &mut c)?;
    stream.synchronize().map_err(err)?;
    let (mut resident, mut with_copy) = (Vec::new(), Vec::new());
    for _ in 0..REPS {
        check_deadline(deadline, PAST_LIMIT_TRY_SMALLER)?;
        start.record(&stream).map_err(err)?;
        gemm(&a, &b, &mut c)?;
        end.record(&stream).map_err(err)?;
        resident.push(f64::from(start.elapsed_ms(&end).map_err(err)?));
        start.record(&stream).map_err(err)?;
        stream.memcpy_htod(&host_a, &mut a).map_err(err)?;
        stream.memcpy_htod(&host_b, &mut b).map_err(err)?;
        gemm(&a, &b, &mut c)?;
        end.record(&stream).map_err(err)?;
        with_copy.push(f64::from(start.elapsed_ms(&end).map_err(err)?));
    }
    Ok((
        summarize(&resident).ok_or("no samples")?,
        summarize(&with_copy).ok_or("no samples")?,
    ))
}

fn agreement(gpu: &mut CudaHandle, n: usize) -> Result<f64, String> {
    let err = |e: cudarc::driver::DriverError| e.to_string();
    let blas = gpu.blas()?;
    let stream = Arc::clone(&gpu.stream);
    let host_a = cpu::random_matrix(n * n, 3);
    let host_b = cpu::random_matrix(n * n, 4);
    let mut cpu_c = vec![0.0f32; n * n];
    cpu::sgemm(n, &host_a, &host_b, &mut cpu_c);
    let a = stream.clone_htod(&host_a).map_err(err)?;
    let b = stream.clone_htod(&host_b).map_err(err)?;
    let mut c = stream.alloc_zeros::<f32>(n * n).map_err(err)?;
    // cuBLAS is column-major: computing Bᵀ·Aᵀ in its view gives (A·B) in row-major.
    // SAFETY: all three buffers hold n × n floats, as the config says.
    unsafe { blas.gemm(sgemm_config(n), &b, &a, &mut c) }
        .map_err(|e| format!("cuBLAS SGEMM failed: {e}"))?;
    let gpu_c = stream.clone_dtoh(&c).map_err(err)?;
    Ok(gpu_c
        .iter()
        .zip(&cpu_c)
        .map(|(g, c)| f64::from((g - c).abs()))
        .fold(0.0, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(size: usize, cpu: f64, gpu: f64) -> MatmulRow {
        let s = |m| {
            Some(Summary {
                median: m,
                min: m,
                max: m,
                samples: 1,
            })
        };
        MatmulRow {
            size,
            flop: 0.0,
            cpu_ms: s(cpu),
            gpu_ms: s(gpu),
            gpu_with_copy_ms: None,
        }
    }

    #[test]
    fn the_crossover_is_where_the_gpu_keeps_winning() {
        let rows = vec![
            row(16, 0.01, 0.02),
            row(32, 0.05, 0.03),
            row(64, 0.1, 0.2),
            row(128, 1.0, 0.3),
            row(256, 8.0, 0.5),
        ];
        assert_eq!(crossover(&rows, |r| r.gpu_ms.map(|s| s.median)), Some(128));
        assert_eq!(
            crossover(&rows, |r| r.gpu_with_copy_ms.map(|s| s.median)),
            None
        );
    }

    #[test]
    fn the_cpu_sweep_times_every_size_up_to_the_cap() {
        let result = run(
            None,
            &MatmulParams { max_size: 128 },
            Instant::now() + Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(
            result.rows.iter().map(|r| r.size).collect::<Vec<_>>(),
            vec![16, 32, 64, 128]
        );
        for r in &result.rows {
            let ms = r.cpu_ms.unwrap();
            assert!(ms.median > 0.0 && r.gpu_ms.is_none());
        }
        let small = result.rows[0].cpu_ms.unwrap().median;
        let large = result.rows[3].cpu_ms.unwrap().median;
        assert!(
            large > small,
            "a 128 product ({large} ms) takes longer than a 16 one ({small} ms)"
        );
        assert_eq!(result.crossover_size, None);
    }
}

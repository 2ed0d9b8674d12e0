//! The launch geometry of every kernel: grid, block and shared memory as a pure
//! function of the sizes a launcher is given. Kept apart from the launchers so that it
//! needs no device: the CPU emulation of the kernels (`tests/kernel_emulation`) runs
//! each kernel on exactly the grid its launcher would use, so a change here is tested
//! there.

use cudarc::driver::LaunchConfig;

use crate::gpu::error::GpuError;

/// Rows per chunk in stage 1 of a column sum (`column_partial_sums_f32`,
/// `relu_backward_partials_*`): each (chunk, column) gets a thread of its own, so a
/// 4,096 × 4,096 bias gradient runs on 4,096 blocks instead of 4, and stage 2 adds at
/// most ⌈rows / 32⌉ partial sums per column. Fixed (not sized from the SM count), so
/// the order of the sums, and with it the result, is the same on every GPU.
pub const COLUMN_CHUNK_ROWS: usize = 32;
/// Threads per block of the column kernels: columns side by side, so a warp reads 32
/// consecutive floats of a row.
const COLUMN_THREADS: u32 = 128;
/// Threads per block of stage 2 (one thread per column, each adding ⌈rows / 32⌉
/// partials): 4,096 columns make 128 blocks.
const SUM_THREADS: u32 = 32;
/// Threads per block of the one-thread-per-row softmax: 4,096 rows make 32 blocks.
const ROW_THREADS: u32 = 128;
/// Threads per block of the fused ReLU backward (two columns each): 64, so a 256-row
/// batch of width 1,024 still makes 64 blocks.
const PAIR_THREADS: u32 = 64;
/// Rows each thread of `bias_relu_*` takes: the grid's y extent is rows ÷ 8.
pub(super) const ROWS_PER_THREAD: usize = 8;
/// The most blocks a launch may have along y.
const MAX_GRID_Y: usize = 65_535;

/// Chunks stage 1 of a column sum cuts `rows` into: the partial sums' row count.
pub fn column_chunks(rows: usize) -> usize {
    rows.div_ceil(COLUMN_CHUNK_ROWS)
}

/// The sizes of one launch, per kernel; [`LaunchShape::config`] gives its grid.
#[derive(Debug, Clone, Copy)]
pub enum LaunchShape {
    /// `busy_f32` on `blocks` blocks.
    Busy {
        /// Blocks asked for (at least one is launched).
        blocks: u32,
    },
    /// An element-wise kernel over `n` elements: `relu_f32`, `relu_backward_f32`,
    /// `f32_to_bf16`, `round_bf16_f32`, `sgd_f32`, `adam_f32`.
    Elementwise {
        /// Elements.
        n: usize,
    },
    /// `add_bias_f32` on a (rows, cols) matrix.
    AddBias {
        /// Rows.
        rows: usize,
        /// Columns (the bias's length).
        cols: usize,
    },
    /// `softmax_xent_f32` on a (rows, classes) logit matrix.
    SoftmaxXent {
        /// Rows (one label each).
        rows: usize,
        /// Classes.
        classes: usize,
    },
    /// `bias_relu_f32` / `bias_relu_bf16` on a (rows, cols) matrix: two adjacent
    /// columns per thread across the grid, [`ROWS_PER_THREAD`] rows each down it.
    BiasRelu {
        /// Rows.
        rows: usize,
        /// Columns (the bias's length).
        cols: usize,
    },
    /// Stage 1 of a column sum on a (rows, cols) matrix, `column_partial_sums_f32`: a
    /// column per thread across the grid, chunks of [`COLUMN_CHUNK_ROWS`] rows down it.
    ColumnChunks {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// `relu_backward_partials_f32` / `_bf16`: as [`LaunchShape::ColumnChunks`] with two
    /// adjacent columns per thread.
    PairChunks {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// `column_sums_f32` on a (rows, cols) matrix, one thread per column (stage 2 of a
    /// column sum, over the partial sums).
    ColumnSums {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// `scaled_sum_f32` over `n` values.
    ScaledSum {
        /// Values summed.
        n: usize,
    },
}

impl LaunchShape {
    /// Grid, block and shared memory for this launch.
    pub fn config(self) -> Result<LaunchConfig, GpuError> {
        // A grid-stride kernel over `items` (the kernels loop, so any grid covers them):
        // one thread per item in blocks of 1024.
        let grid_stride = |items: usize| {
            u32::try_from(items.max(1))
                .map(LaunchConfig::for_num_elems)
                .map_err(|_| {
                    GpuError::Unsupported(format!("{items} elements is too many for one launch"))
                })
        };
        let blocks = |items: usize, per_block: u32| {
            u32::try_from(items.max(1).div_ceil(per_block as usize)).map_err(|_| {
                GpuError::Unsupported(format!("{items} items is too many for one launch"))
            })
        };
        let blocks_of_256 = |blocks: u32| LaunchConfig {
            grid_dim: (blocks.max(1), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        match self {
            Self::Busy { blocks } => Ok(blocks_of_256(blocks)),
            Self::Elementwise { n } => grid_stride(n),
            Self::AddBias { rows, cols } => grid_stride(rows * cols),
            Self::BiasRelu { rows, cols } => Ok(LaunchConfig {
                grid_dim: (
                    blocks(cols.div_ceil(2), COLUMN_THREADS)?,
                    rows.div_ceil(ROWS_PER_THREAD).clamp(1, MAX_GRID_Y) as u32,
                    1,
                ),
                block_dim: (COLUMN_THREADS, 1, 1),
                shared_mem_bytes: 0,
            }),
            Self::PairChunks { rows, cols } => Ok(LaunchConfig {
                grid_dim: (
                    blocks(cols.div_ceil(2), PAIR_THREADS)?,
                    column_chunks(rows).clamp(1, MAX_GRID_Y) as u32,
                    1,
                ),
                block_dim: (PAIR_THREADS, 1, 1),
                shared_mem_bytes: 0,
            }),
            Self::SoftmaxXent { rows, .. } => Ok(LaunchConfig {
                grid_dim: (blocks(rows, ROW_THREADS)?, 1, 1),
                block_dim: (ROW_THREADS, 1, 1),
                shared_mem_bytes: 0,
            }),
            Self::ColumnChunks { rows, cols } => Ok(LaunchConfig {
                grid_dim: (
                    blocks(cols, COLUMN_THREADS)?,
                    column_chunks(rows).clamp(1, MAX_GRID_Y) as u32,
                    1,
                ),
                block_dim: (COLUMN_THREADS, 1, 1),
                shared_mem_bytes: 0,
            }),
            Self::ColumnSums { cols, .. } => Ok(LaunchConfig {
                grid_dim: (blocks(cols, SUM_THREADS)?, 1, 1),
                block_dim: (SUM_THREADS, 1, 1),
                shared_mem_bytes: 0,
            }),
            // One block of 256 threads: the size of the kernel's shared array.
            Self::ScaledSum { .. } => Ok(blocks_of_256(1)),
        }
    }
}

/// Whether a launch of `config` over `elements` of work fills a GPU of `sms` SMs: at
/// least one block per SM, unless the work is under 4,096 elements per SM (16 KiB of
/// FP32 each, a few microseconds at any GPU's memory bandwidth), where filling the GPU
/// would not pay for the launch. The old bias gradient — one thread per column, 4,096
/// columns in 4 blocks over 4,096 × 4,096 elements — fails this on every GPU.
pub fn fills_the_gpu(config: &LaunchConfig, elements: usize, sms: u32) -> bool {
    let blocks =
        u64::from(config.grid_dim.0) * u64::from(config.grid_dim.1) * u64::from(config.grid_dim.2);
    elements < 4096 * sms as usize || blocks >= u64::from(sms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_old_bias_gradient_launch_is_refused_and_the_two_stage_one_fills_the_gpu() {
        let (rows, cols) = (4096, 4096);
        let old = LaunchConfig::for_num_elems(cols as u32);
        assert_eq!(old.grid_dim.0, 4, "one thread per column, blocks of 1,024");
        let stage1 = LaunchShape::ColumnChunks { rows, cols }.config().unwrap();
        let stage2 = LaunchShape::ColumnSums {
            rows: column_chunks(rows),
            cols,
        }
        .config()
        .unwrap();
        for sms in [40, 80, 108, 132, 144] {
            assert!(!fills_the_gpu(&old, rows * cols, sms), "{sms} SMs");
            assert!(fills_the_gpu(&stage1, rows * cols, sms), "{sms} SMs");
            assert!(
                fills_the_gpu(&stage2, column_chunks(rows) * cols, sms),
                "{sms} SMs"
            );
        }
        assert_eq!((stage1.grid_dim.0, stage1.grid_dim.1), (32, 128));
    }

    #[test]
    fn chunks_cover_every_row_once() {
        assert_eq!(column_chunks(0), 0);
        assert_eq!(column_chunks(1), 1);
        assert_eq!(column_chunks(32), 1);
        assert_eq!(column_chunks(33), 2);
        assert_eq!(column_chunks(4096), 128);
    }
}

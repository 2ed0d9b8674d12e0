//! The launch geometry of every kernel: grid, block and shared memory as a pure
//! function of the sizes a launcher is given. Kept apart from the launchers so that it
//! needs no device: the CPU emulation of the kernels (`tests/kernel_emulation`) runs
//! each kernel on exactly the grid its launcher would use, so a change here is tested
//! there.

use cudarc::driver::LaunchConfig;

use crate::gpu::error::GpuError;

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
    /// `column_sums_f32` on a (rows, cols) matrix.
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
        let blocks_of_256 = |blocks: u32| LaunchConfig {
            grid_dim: (blocks.max(1), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        match self {
            Self::Busy { blocks } => Ok(blocks_of_256(blocks)),
            Self::Elementwise { n } => grid_stride(n),
            Self::AddBias { rows, cols } => grid_stride(rows * cols),
            Self::SoftmaxXent { rows, .. } => grid_stride(rows),
            Self::ColumnSums { cols, .. } => grid_stride(cols),
            // One block of 256 threads: the size of the kernel's shared array.
            Self::ScaledSum { .. } => Ok(blocks_of_256(1)),
        }
    }
}

// Shared helpers for GPU Lab's kernels. Each .cu file includes this header;
// the server pastes it in place of that include before handing the
// source to NVRTC, so no include path is needed for it.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Global index of this thread in a 1-D grid, and the grid's total thread count,
// for grid-stride loops that work for any n and any launch size.
__device__ __forceinline__ unsigned long long global_index() {
    return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ unsigned long long grid_stride() {
    return (unsigned long long)gridDim.x * blockDim.x;
}

// Chunk k of `chunk_rows` rows in a matrix of `rows` rows (stage 1 of a column sum):
// how many chunks there are, and the row after chunk k's last (the last chunk may be
// short).
__device__ __forceinline__ unsigned long long chunk_count(unsigned long long rows, unsigned long long chunk_rows) {
    return (rows + chunk_rows - 1) / chunk_rows;
}

__device__ __forceinline__ unsigned long long chunk_end(unsigned long long k, unsigned long long rows,
                                                        unsigned long long chunk_rows) {
    const unsigned long long end = (k + 1) * chunk_rows;
    return end < rows ? end : rows;
}

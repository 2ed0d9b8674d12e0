// Reductions for the training run: column sums (bias gradients) and the batch loss.
//
// A bias gradient sums a (rows, cols) matrix down its columns. One thread per column
// is 4 blocks for 4,096 columns: 4 of an H200's 132 SMs (Nsight Compute, 2026-11-28).
// So the sum runs in two stages: stage 1 gives every chunk of `chunk_rows` rows its
// own threads (a 2-D grid: columns across, chunks down) and writes one partial sum per
// (chunk, column); stage 2 (`column_sums_f32` on the partials) adds the chunks up.
// Both stages keep a fixed order, so the result is reproducible run to run.
#include "common.cuh"

// partial[k, col] = sum of x[row, col] over rows k·chunk_rows … (k+1)·chunk_rows − 1.
extern "C" __global__ void column_partial_sums_f32(const float* x, float* partial,
                                                   unsigned long long rows, unsigned long long cols,
                                                   unsigned long long chunk_rows) {
    const unsigned long long chunks = chunk_count(rows, chunk_rows);
    for (unsigned long long k = blockIdx.y; k < chunks; k += gridDim.y) {
        const unsigned long long first = k * chunk_rows, last = chunk_end(k, rows, chunk_rows);
        for (unsigned long long c = global_index(); c < cols; c += grid_stride()) {
            float s = 0.0f;
            for (unsigned long long r = first; r < last; ++r) s += x[r * cols + c];
            partial[k * cols + c] = s;
        }
    }
}

// out[col] = sum over rows of x[row, col] for a row-major (rows, cols) matrix.
// One thread per column; rows is a batch (at most a few thousand), so a plain loop
// keeps the summation order fixed and the result reproducible.
extern "C" __global__ void column_sums_f32(const float* x, float* out,
                                           unsigned long long rows, unsigned long long cols) {
    for (unsigned long long c = global_index(); c < cols; c += grid_stride()) {
        float s = 0.0f;
        for (unsigned long long r = 0; r < rows; ++r) s += x[r * cols + c];
        out[c] = s;
    }
}

// *out = scale × sum of x[0..n). Launch with ONE block of 256 threads: each thread
// sums a strided slice, then the block reduces in shared memory.
extern "C" __global__ void scaled_sum_f32(const float* x, float* out, unsigned long long n, float scale) {
    __shared__ float partial[256];
    float s = 0.0f;
    for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
    partial[threadIdx.x] = s;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = partial[0] * scale;
}

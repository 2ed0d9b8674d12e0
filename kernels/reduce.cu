// Reductions for the training run: column sums (bias gradients) and the batch loss.
#include "common.cuh"

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
